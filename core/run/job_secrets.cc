#include "core/run/job_secrets.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/file_util.h"
#include "core/status_macros.h"

namespace monsoon {

namespace {

// The shortest token taken as a secret, from whichever source.
constexpr size_t kMinTokenLength = 16;

// `token` from `source`; InvalidArgument when it is too short to be a secret.
absl::StatusOr<std::string> CheckedToken(absl::string_view token, const std::string& source) {
  token = absl::StripAsciiWhitespace(token);
  if (token.size() < kMinTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat(source, " holds a token of only ", token.size(),
                                                   " characters; a job token needs at least ",
                                                   kMinTokenLength));
  }
  return std::string(token);
}

// $MONSOON_JOB_TOKEN when set (else ""); InvalidArgument when it is too short.
absl::StatusOr<std::string> TokenFromEnvironment() {
  const char* env = std::getenv(kJobTokenEnv);
  if (env == nullptr || *env == '\0') return std::string();
  return CheckedToken(env, kJobTokenEnv);
}

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
Bio MemoryBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
}

// The certificate, key and CA gRPC is about to be given, checked first, so that a wrong file is
// named here rather than reported by gRPC as a server that "cannot listen".
absl::Status CheckTlsMaterial(const JobSecrets& secrets, const SecurityConfig& security) {
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(MemoryBio(secrets.tls_cert).get(), nullptr, nullptr, nullptr), X509_free);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("security.tls_cert: ", security.tls_cert, " holds no PEM certificate"));
  }
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(MemoryBio(secrets.tls_key).get(), nullptr, nullptr, nullptr),
      EVP_PKEY_free);
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "security.tls_key: ", security.tls_key, " holds no PEM private key (or it is encrypted)"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("security.tls_key: ", security.tls_key,
                                                   " is not the key of the certificate in ",
                                                   security.tls_cert));
  }
  std::unique_ptr<X509, decltype(&X509_free)> ca(
      PEM_read_bio_X509(MemoryBio(secrets.tls_ca).get(), nullptr, nullptr, nullptr), X509_free);
  if (ca == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("security.tls_ca: ", security.tls_ca, " holds no PEM certificate"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buffer(1 << 20);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(digest), length));
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::StatusOr<std::string> CreateJobToken(const RunDir& dir) {
  MONSOON_ASSIGN_OR_RETURN(std::string from_env, TokenFromEnvironment());
  if (!from_env.empty()) return from_env;
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("OpenSSL could not produce random bytes for the job token");
  }
  const std::string token =
      absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(bytes), sizeof(bytes)));
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(dir.token_path(), token + "\n", 0600));
  return token;
}

absl::StatusOr<std::string> ReadJobToken(const RunDir& dir) {
  MONSOON_ASSIGN_OR_RETURN(std::string from_env, TokenFromEnvironment());
  if (!from_env.empty()) return from_env;
  struct stat st;
  if (stat(dir.token_path().c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("job token missing: ", dir.token_path()));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir.token_path(), " is readable by others (mode ",
                     absl::StrFormat("%04o", st.st_mode & 0777), "); it must be 0600"));
  }
  MONSOON_ASSIGN_OR_RETURN(std::string token, ReadFile(dir.token_path()));
  return CheckedToken(token, dir.token_path());
}

absl::StatusOr<JobSecrets> ReadJobSecrets(const RunDir& dir, const SecurityConfig& security) {
  JobSecrets secrets;
  MONSOON_ASSIGN_OR_RETURN(secrets.token, ReadJobToken(dir));
  if (security.tls()) {
    MONSOON_ASSIGN_OR_RETURN(secrets.tls_cert, ReadFile(security.tls_cert));
    MONSOON_ASSIGN_OR_RETURN(secrets.tls_key, ReadFile(security.tls_key));
    MONSOON_ASSIGN_OR_RETURN(secrets.tls_ca, ReadFile(security.tls_ca));
    secrets.tls_server_name = security.tls_server_name;
    MONSOON_RETURN_IF_ERROR(CheckTlsMaterial(secrets, security));
  }
  return secrets;
}

}  // namespace monsoon
