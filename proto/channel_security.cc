#include "proto/channel_security.h"

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

namespace monsoon {

std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const JobSecrets& secrets) {
  if (!secrets.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = secrets.tls_ca;
  options.pem_key_cert_pairs.push_back({secrets.tls_key, secrets.tls_cert});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const JobSecrets& secrets,
                                                                grpc::ChannelArguments* args) {
  if (!secrets.tls()) return grpc::InsecureChannelCredentials();
  args->SetSslTargetNameOverride(secrets.tls_server_name);
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = secrets.tls_ca;
  options.pem_private_key = secrets.tls_key;
  options.pem_cert_chain = secrets.tls_cert;
  return grpc::SslCredentials(options);
}

}  // namespace monsoon
