#include "proto/grpc_status.h"

#include <string>

namespace monsoon {

// Both code enums use the canonical numbering (google.rpc.Code).
grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  std::string message = status.error_message();
  // A Monsoon server over its connection cap answers a new connection with a GOAWAY frame in
  // place of its preface (server/capped_listener.cc).
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
      message.find("Failed parsing HTTP/2") != std::string::npos) {
    message += " (the server refused the connection at once: it was over its cap of connections "
               "open at once, as its log says: a flood of connections?)";
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
}

}  // namespace monsoon
