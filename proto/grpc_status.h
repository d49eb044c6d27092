// The one place where gRPC and Abseil statuses are converted, both ways.
#ifndef MONSOON_PROTO_GRPC_STATUS_H_
#define MONSOON_PROTO_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace monsoon {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace monsoon

#endif  // MONSOON_PROTO_GRPC_STATUS_H_
