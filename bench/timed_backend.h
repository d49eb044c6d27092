// A ComputeBackend that runs another one and adds up the wall time of each kind of call: where
// a training step's time goes (compute_bench --breakdown). For a synchronous backend (the
// CPU's) only.
#ifndef MONSOON_BENCH_TIMED_BACKEND_H_
#define MONSOON_BENCH_TIMED_BACKEND_H_

#include <map>
#include <string>

#include "bench/seconds.h"
#include "core/compute/compute_backend.h"

namespace monsoon {

class TimedBackend : public ComputeBackend {
 public:
  explicit TimedBackend(ComputeBackend* inner) : inner_(inner) {}
  // Seconds by kind of call ("conv2d forward", "gemm", ...) since the last Reset.
  const std::map<std::string, double>& seconds() const { return seconds_; }
  void Reset() { seconds_.clear(); }

  std::string name() const override { return inner_->name(); }
  DeviceBuffer Allocate(size_t n) override { return inner_->Allocate(n); }
  void CopyToDevice(const float* host, float* device, size_t n) override {
    Timed("copies", [&] { inner_->CopyToDevice(host, device, n); });
  }
  void CopyToHost(const float* device, float* host, size_t n) override {
    Timed("copies", [&] { inner_->CopyToHost(device, host, n); });
  }
  void CopyOnDevice(const float* from, float* to, size_t n) override {
    Timed("copies", [&] { inner_->CopyOnDevice(from, to, n); });
  }
  size_t CopyToHostFindingNonFinite(const float* device, float* host, size_t n) override {
    size_t first = n;
    Timed("copies", [&] { first = inner_->CopyToHostFindingNonFinite(device, host, n); });
    return first;
  }
  void Gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, const float* b,
            float beta, float* c) override {
    Timed("gemm", [&] { inner_->Gemm(ta, tb, m, n, k, alpha, a, b, beta, c); });
  }
  void GatherRows(const float* table, int cols, const float* index, int rows, float* out) override {
    Timed("copies", [&] { inner_->GatherRows(table, cols, index, rows, out); });
  }
  void AddBias(const float* bias, int rows, int cols, float* x) override {
    Timed("bias", [&] { inner_->AddBias(bias, rows, cols, x); });
  }
  void ColumnSum(const float* x, int rows, int cols, float* out) override {
    Timed("bias", [&] { inner_->ColumnSum(x, rows, cols, out); });
  }
  void ActivationForward(ActivationFn f, const float* x, float* y, size_t n) override {
    Timed("activation forward", [&] { inner_->ActivationForward(f, x, y, n); });
  }
  void ActivationBackward(ActivationFn f, const float* x, const float* y, const float* dy,
                          float* dx, size_t n) override {
    Timed("activation backward", [&] { inner_->ActivationBackward(f, x, y, dy, dx, n); });
  }
  void SoftmaxCrossEntropy(const float* logits, const float* labels, int rows, int classes,
                           float* dlogits, float* loss) override {
    Timed("loss",
          [&] { inner_->SoftmaxCrossEntropy(logits, labels, rows, classes, dlogits, loss); });
  }
  void MeanSquaredError(const float* pred, const float* target, int rows, int cols, float* dpred,
                        float* loss) override {
    Timed("loss", [&] { inner_->MeanSquaredError(pred, target, rows, cols, dpred, loss); });
  }
  void Axpy(float alpha, const float* x, float* y, size_t n) override {
    Timed("optimizer", [&] { inner_->Axpy(alpha, x, y, n); });
  }
  void NesterovStep(float lr, float mu, const float* g, float* v, float* w, size_t n) override {
    Timed("optimizer", [&] { inner_->NesterovStep(lr, mu, g, v, w, n); });
  }
  int NativeChannelBlock() const override { return inner_->NativeChannelBlock(); }
  void ConvertLayout(int channels, int height, int width, int batch, bool to_native, const float* x,
                     float* y) override {
    Timed("layout conversions",
          [&] { inner_->ConvertLayout(channels, height, width, batch, to_native, x, y); });
  }
  void Conv2dForward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                     int batch, float* y) override {
    Timed("conv2d forward", [&] { inner_->Conv2dForward(g, x, w, b, batch, y); });
  }
  void Conv2dBackward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                      int batch, float* dw, float* db, float* dx) override {
    Timed("conv2d backward", [&] { inner_->Conv2dBackward(g, x, w, dy, batch, dw, db, dx); });
  }
  size_t PoolWorkspaceBytes(const Pool2dGeometry& g, PoolKind kind, int batch) const override {
    return inner_->PoolWorkspaceBytes(g, kind, batch);
  }
  void Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch, float* y,
                     uint8_t* workspace) override {
    Timed("pool forward", [&] { inner_->Pool2dForward(g, kind, x, batch, y, workspace); });
  }
  void Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x, const float* y,
                      const uint8_t* workspace, const float* dy, int batch, float* dx) override {
    Timed("pool backward",
          [&] { inner_->Pool2dBackward(g, kind, x, y, workspace, dy, batch, dx); });
  }
  void DropoutForward(float rate, uint64_t seed, const float* x, float* mask, float* y,
                      size_t n) override {
    Timed("dropout", [&] { inner_->DropoutForward(rate, seed, x, mask, y, n); });
  }
  void Add(const float* a, const float* b, float* y, size_t n) override {
    Timed("add", [&] { inner_->Add(a, b, y, n); });
  }
  void DropoutBackward(const float* mask, const float* dy, float* dx, size_t n) override {
    Timed("dropout", [&] { inner_->DropoutBackward(mask, dy, dx, n); });
  }
  void BatchNormForward(const BatchNormGeometry& g, bool training, const float* x,
                        const float* gamma, const float* beta, float* running_mean,
                        float* running_var, int batch, float* y, float* mean,
                        float* invstd) override {
    Timed("batchnorm forward", [&] {
      inner_->BatchNormForward(g, training, x, gamma, beta, running_mean, running_var, batch, y,
                               mean, invstd);
    });
  }
  void BatchNormBackward(const BatchNormGeometry& g, bool training, const float* x,
                         const float* gamma, const float* mean, const float* invstd,
                         const float* dy, int batch, float* dgamma, float* dbeta,
                         float* dx) override {
    Timed("batchnorm backward", [&] {
      inner_->BatchNormBackward(g, training, x, gamma, mean, invstd, dy, batch, dgamma, dbeta,
                                dx);
    });
  }

 private:
  template <typename Call>
  void Timed(const char* kind, Call call) {
    seconds_[kind] += SecondsOf(call);
  }

  ComputeBackend* const inner_;
  std::map<std::string, double> seconds_;
};

}  // namespace monsoon

#endif  // MONSOON_BENCH_TIMED_BACKEND_H_
