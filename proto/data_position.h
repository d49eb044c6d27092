// The one conversion, each way, between a worker's DataPosition and its wire form (sent with
// every push and exchange, returned by Hello as the resume point).
#ifndef MONSOON_PROTO_DATA_POSITION_H_
#define MONSOON_PROTO_DATA_POSITION_H_

#include "core/data/data_shard.h"
#include "proto/monsoon.pb.h"

namespace monsoon {

inline void ToWire(const DataPosition& position, wire::DataPosition* out) {
  out->set_step(position.step);
  out->set_epoch(position.epoch);
  out->set_cursor(position.cursor);
}

inline DataPosition FromWire(const wire::DataPosition& position) {
  return {position.step(), position.epoch(), position.cursor()};
}

}  // namespace monsoon

#endif  // MONSOON_PROTO_DATA_POSITION_H_
