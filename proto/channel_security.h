// gRPC credentials for a job's secrets (core/run/run_dir.h JobSecrets): plaintext, or mutual TLS
// where every role presents the job's certificate and checks its peer's against the job's CA.
// The job token travels as call metadata either way (kTokenMetadataKey).
#ifndef MONSOON_PROTO_CHANNEL_SECURITY_H_
#define MONSOON_PROTO_CHANNEL_SECURITY_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "core/run/job_secrets.h"

namespace monsoon {

std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const JobSecrets& secrets);
// Also sets, in *args, the name the server's certificate must carry (tls_server_name).
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const JobSecrets& secrets,
                                                                grpc::ChannelArguments* args);

}  // namespace monsoon

#endif  // MONSOON_PROTO_CHANNEL_SECURITY_H_
