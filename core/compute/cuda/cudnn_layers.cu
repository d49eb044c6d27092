// CudnnLayers (see cudnn_layers.h): cuDNN's legacy convolution, pooling and batch-norm calls,
// resolved by dlsym in a library found at run time. Compiled by nvcc.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/compute/cuda/cudnn_layers.h"
#include "core/status_macros.h"

namespace monsoon {

// Every cuDNN function Monsoon calls, by name.
#define MONSOON_CUDNN_FUNCTIONS(X)                 \
  X(cudnnGetVersion)                               \
  X(cudnnGetErrorString)                           \
  X(cudnnCreate)                                   \
  X(cudnnDestroy)                                  \
  X(cudnnSetStream)                                \
  X(cudnnCreateTensorDescriptor)                   \
  X(cudnnSetTensor4dDescriptor)                    \
  X(cudnnDestroyTensorDescriptor)                  \
  X(cudnnCreateFilterDescriptor)                   \
  X(cudnnSetFilter4dDescriptor)                    \
  X(cudnnDestroyFilterDescriptor)                  \
  X(cudnnCreateConvolutionDescriptor)              \
  X(cudnnSetConvolution2dDescriptor)               \
  X(cudnnSetConvolutionMathType)                   \
  X(cudnnDestroyConvolutionDescriptor)             \
  X(cudnnGetConvolutionForwardAlgorithm_v7)        \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)   \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
  X(cudnnConvolutionForward)                       \
  X(cudnnConvolutionBackwardData)                  \
  X(cudnnConvolutionBackwardFilter)                \
  X(cudnnConvolutionBackwardBias)                  \
  X(cudnnAddTensor)                                \
  X(cudnnCreatePoolingDescriptor)                  \
  X(cudnnSetPooling2dDescriptor)                   \
  X(cudnnDestroyPoolingDescriptor)                 \
  X(cudnnPoolingForward)                           \
  X(cudnnPoolingBackward)                          \
  X(cudnnBatchNormalizationForwardTraining)        \
  X(cudnnBatchNormalizationBackward)

struct CudnnApi {
  std::string path;  // the library's file
#define MONSOON_CUDNN_POINTER(name) decltype(&::name) name = nullptr;
  MONSOON_CUDNN_FUNCTIONS(MONSOON_CUDNN_POINTER)
#undef MONSOON_CUDNN_POINTER
};

struct CudnnLayers::ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool usable = false;  // every direction has an algorithm within the workspace bound
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  size_t forward_bytes = 0, backward_data_bytes = 0, backward_filter_bytes = 0;
};

struct CudnnLayers::PoolPlan {
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
};

namespace {

constexpr char kLibrary[] = "libcudnn.so.9";
constexpr int kMajorVersion = 9;

// The library `cudnn` names (see CudnnLayers::Open), loaded for the rest of the process (cuDNN
// is not unloaded: its own libraries hold state until exit).
absl::StatusOr<void*> LoadLibrary(const CudnnLibrary& cudnn) {
  const bool search = cudnn.where == CudnnLibrary::Where::kAuto;
  std::vector<std::string> candidates;
  if (search) {
    candidates.push_back(kLibrary);
    if (const char* home = std::getenv("CUDA_HOME")) {
      candidates.push_back(absl::StrCat(home, "/lib64/", kLibrary));
    }
    candidates.push_back(absl::StrCat("/usr/local/cuda/lib64/", kLibrary));
  } else {
    std::error_code error;
    candidates.push_back(std::filesystem::is_directory(cudnn.path, error)
                             ? absl::StrCat(cudnn.path, "/", kLibrary)
                             : cudnn.path);
  }
  std::string why;
  for (const std::string& path : candidates) {
    if (void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    why = dlerror();
  }
  if (search) {
    return absl::NotFoundError(absl::StrCat("no ", kLibrary,
                                            " on the library path (LD_LIBRARY_PATH), under "
                                            "$CUDA_HOME/lib64 or /usr/local/cuda/lib64"));
  }
  return absl::FailedPreconditionError(absl::StrCat("compute.cudnn_path ", cudnn.path, ": ", why));
}

// cuDNN's functions in `library`, or why it is not cuDNN 9.
absl::StatusOr<std::unique_ptr<CudnnApi>> Resolve(void* library) {
  auto api = std::make_unique<CudnnApi>();
  const link_map* map = nullptr;
  api->path = dlinfo(library, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr ? map->l_name : "?";
#define MONSOON_CUDNN_RESOLVE(name)                                                 \
  api->name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name));           \
  if (api->name == nullptr) {                                                       \
    return absl::FailedPreconditionError(                                           \
        absl::StrCat(api->path, " has no ", #name, ": not cuDNN ", kMajorVersion)); \
  }
  MONSOON_CUDNN_FUNCTIONS(MONSOON_CUDNN_RESOLVE)
#undef MONSOON_CUDNN_RESOLVE
  const size_t version = api->cudnnGetVersion();
  if (version / 10000 != kMajorVersion) {
    return absl::FailedPreconditionError(absl::StrCat(api->path, " is cuDNN version ", version,
                                                      "; Monsoon takes cuDNN ", kMajorVersion));
  }
  return api;
}

// The first of cuDNN's ranked algorithms that succeeds within `bound` bytes of workspace.
template <class Perf, class Algo>
bool Choose(const Perf* ranked, int count, size_t bound, Algo* algo, size_t* bytes) {
  for (int i = 0; i < count; ++i) {
    if (ranked[i].status == CUDNN_STATUS_SUCCESS && ranked[i].memory <= bound) {
      *algo = ranked[i].algo;
      *bytes = ranked[i].memory;
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudnnLayers>> CudnnLayers::Open(const CudnnLibrary& library,
                                                               cudaStream_t stream,
                                                               Precision precision,
                                                               size_t workspace_bytes) {
  MONSOON_ASSIGN_OR_RETURN(void* loaded, LoadLibrary(library));
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<CudnnApi> api, Resolve(loaded));
  cudnnHandle_t handle = nullptr;
  cudnnStatus_t status = api->cudnnCreate(&handle);
  if (status == CUDNN_STATUS_SUCCESS) status = api->cudnnSetStream(handle, stream);
  if (status != CUDNN_STATUS_SUCCESS) {
    if (handle != nullptr) api->cudnnDestroy(handle);
    return absl::FailedPreconditionError(
        absl::StrCat(api->path, ": cudnnCreate: ", api->cudnnGetErrorString(status)));
  }
  return std::unique_ptr<CudnnLayers>(
      new CudnnLayers(std::move(api), handle, precision, workspace_bytes));
}

CudnnLayers::CudnnLayers(std::unique_ptr<CudnnApi> api, cudnnHandle_t handle, Precision precision,
                         size_t workspace_bytes)
    : api_(std::move(api)),
      handle_(handle),
      precision_(precision),
      workspace_bytes_(workspace_bytes) {}

CudnnLayers::~CudnnLayers() {
  for (auto& [key, plan] : plans_) {
    if (plan->w != nullptr) api_->cudnnDestroyFilterDescriptor(plan->w);
    if (plan->conv != nullptr) api_->cudnnDestroyConvolutionDescriptor(plan->conv);
  }
  for (auto& [key, plan] : pools_) {
    if (plan->pool != nullptr) api_->cudnnDestroyPoolingDescriptor(plan->pool);
  }
  for (cudnnTensorDescriptor_t tensor : tensors_) api_->cudnnDestroyTensorDescriptor(tensor);
  api_->cudnnDestroy(handle_);
}

std::string CudnnLayers::version() const {
  const size_t v = api_->cudnnGetVersion();
  return absl::StrCat("cuDNN ", v / 10000, ".", v / 100 % 100, ".", v % 100);
}

bool CudnnLayers::Takes(const Conv2dGeometry& g) {
  return g.in == Layout::kPlain && g.out == Layout::kPlain && g.relu == FusedRelu::kNone &&
         g.height + 2 * g.pad_top >= g.kernel && g.width + 2 * g.pad_left >= g.kernel &&
         g.out_height == (g.height + 2 * g.pad_top - g.kernel) / g.stride + 1 &&
         g.out_width == (g.width + 2 * g.pad_left - g.kernel) / g.stride + 1;
}

bool CudnnLayers::Takes(const Pool2dGeometry& g) {
  return g.layout == Layout::kPlain && g.relu == FusedRelu::kNone && g.height >= g.size &&
         g.width >= g.size && g.out_height == (g.height - g.size) / g.stride + 1 &&
         g.out_width == (g.width - g.size) / g.stride + 1;
}

absl::StatusOr<bool> CudnnLayers::Conv2dForward(const Conv2dGeometry& g, const float* x,
                                                const float* w, const float* b, int batch, float* y,
                                                const Workspace& workspace) {
  MONSOON_ASSIGN_OR_RETURN(ConvPlan * plan, Plan(g, batch));
  if (!plan->usable) return false;
  void* space = plan->forward_bytes == 0 ? nullptr : workspace(plan->forward_bytes);
  if (plan->forward_bytes > 0 && space == nullptr) return true;  // the caller's error
  const float one = 1.0f, zero = 0.0f;
  MONSOON_RETURN_IF_ERROR(Check(
      api_->cudnnConvolutionForward(handle_, &one, plan->x, x, plan->w, w, plan->conv,
                                    plan->forward, space, plan->forward_bytes, &zero, plan->y, y),
      "cudnnConvolutionForward"));
  MONSOON_RETURN_IF_ERROR(Check(
      api_->cudnnAddTensor(handle_, &one, plan->bias, b, &one, plan->y, y), "cudnnAddTensor"));
  return true;
}

absl::StatusOr<bool> CudnnLayers::Conv2dBackward(const Conv2dGeometry& g, const float* x,
                                                 const float* w, const float* dy, int batch,
                                                 float* dw, float* db, float* dx,
                                                 const Workspace& workspace) {
  MONSOON_ASSIGN_OR_RETURN(ConvPlan * plan, Plan(g, batch));
  if (!plan->usable) return false;
  const size_t bytes =
      std::max(plan->backward_filter_bytes, dx != nullptr ? plan->backward_data_bytes : size_t{0});
  void* space = bytes == 0 ? nullptr : workspace(bytes);
  if (bytes > 0 && space == nullptr) return true;  // the caller's error
  const float one = 1.0f, zero = 0.0f;
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnConvolutionBackwardBias(handle_, &one, plan->y, dy, &zero, plan->bias, db),
            "cudnnConvolutionBackwardBias"));
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnConvolutionBackwardFilter(handle_, &one, plan->x, x, plan->y, dy, plan->conv,
                                                 plan->backward_filter, space,
                                                 plan->backward_filter_bytes, &zero, plan->w, dw),
            "cudnnConvolutionBackwardFilter"));
  if (dx == nullptr) return true;
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnConvolutionBackwardData(handle_, &one, plan->w, w, plan->y, dy, plan->conv,
                                               plan->backward_data, space,
                                               plan->backward_data_bytes, &zero, plan->x, dx),
            "cudnnConvolutionBackwardData"));
  return true;
}

absl::Status CudnnLayers::Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x,
                                        int batch, float* y) {
  MONSOON_ASSIGN_OR_RETURN(PoolPlan * plan, Pool(g, kind, batch));
  const float one = 1.0f, zero = 0.0f;
  return Check(api_->cudnnPoolingForward(handle_, plan->pool, &one, plan->x, x, &zero, plan->y, y),
               "cudnnPoolingForward");
}

absl::Status CudnnLayers::Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x,
                                         const float* y, const float* dy, int batch, float* dx) {
  MONSOON_ASSIGN_OR_RETURN(PoolPlan * plan, Pool(g, kind, batch));
  const float one = 1.0f, zero = 0.0f;
  return Check(api_->cudnnPoolingBackward(handle_, plan->pool, &one, plan->y, y, plan->y, dy,
                                          plan->x, x, &zero, plan->x, dx),
               "cudnnPoolingBackward");
}

absl::Status CudnnLayers::BatchNormTrainingForward(const BatchNormGeometry& g, const float* x,
                                                   const float* gamma, const float* beta,
                                                   float* running_mean, float* running_var,
                                                   int batch, float* y, float* mean,
                                                   float* invstd) {
  MONSOON_ASSIGN_OR_RETURN(auto tensors, Norm(batch, g.channels, g.pixels));
  const float one = 1.0f, zero = 0.0f;
  return Check(api_->cudnnBatchNormalizationForwardTraining(
                   handle_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, tensors.first, x, tensors.first,
                   y, tensors.second, gamma, beta, g.momentum, running_mean, running_var, g.epsilon,
                   mean, invstd),
               "cudnnBatchNormalizationForwardTraining");
}

absl::Status CudnnLayers::BatchNormTrainingBackward(const BatchNormGeometry& g, const float* x,
                                                    const float* gamma, const float* mean,
                                                    const float* invstd, const float* dy, int batch,
                                                    float* dgamma, float* dbeta, float* dx) {
  MONSOON_ASSIGN_OR_RETURN(auto tensors, Norm(batch, g.channels, g.pixels));
  const float one = 1.0f, zero = 0.0f;
  return Check(api_->cudnnBatchNormalizationBackward(handle_, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                     &one, &zero, tensors.first, x, tensors.first,
                                                     dy, tensors.first, dx, tensors.second, gamma,
                                                     dgamma, dbeta, g.epsilon, mean, invstd),
               "cudnnBatchNormalizationBackward");
}

absl::StatusOr<CudnnLayers::ConvPlan*> CudnnLayers::Plan(const Conv2dGeometry& g, int batch) {
  std::unique_ptr<ConvPlan>& plan = plans_[{g.channels, g.height, g.width, g.filters, g.kernel,
                                            g.stride, g.pad_top, g.pad_left, batch}];
  if (plan != nullptr) return plan.get();
  plan = std::make_unique<ConvPlan>();
  MONSOON_ASSIGN_OR_RETURN(plan->x, Tensor(batch, g.channels, g.height, g.width));
  MONSOON_ASSIGN_OR_RETURN(plan->y, Tensor(batch, g.filters, g.out_height, g.out_width));
  MONSOON_ASSIGN_OR_RETURN(plan->bias, Tensor(1, g.filters, 1, 1));
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnCreateFilterDescriptor(&plan->w), "cudnnCreateFilterDescriptor"));
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnSetFilter4dDescriptor(plan->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                             g.filters, g.channels, g.kernel, g.kernel),
            "cudnnSetFilter4dDescriptor"));
  MONSOON_RETURN_IF_ERROR(Check(api_->cudnnCreateConvolutionDescriptor(&plan->conv),
                                "cudnnCreateConvolutionDescriptor"));
  MONSOON_RETURN_IF_ERROR(Check(
      api_->cudnnSetConvolution2dDescriptor(plan->conv, g.pad_top, g.pad_left, g.stride, g.stride,
                                            1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor"));
  // fp32: no tensor cores; tf32 and bf16: tensor cores on tf32-rounded operands.
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnSetConvolutionMathType(
                plan->conv, precision_ == Precision::kFp32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH),
            "cudnnSetConvolutionMathType"));
  MONSOON_RETURN_IF_ERROR(ChooseAlgorithms(plan.get()));
  return plan.get();
}

absl::Status CudnnLayers::ChooseAlgorithms(ConvPlan* plan) {
  int count = 0;
  cudnnConvolutionFwdAlgoPerf_t forward[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  MONSOON_RETURN_IF_ERROR(Check(api_->cudnnGetConvolutionForwardAlgorithm_v7(
                                    handle_, plan->x, plan->w, plan->conv, plan->y,
                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, forward),
                                "cudnnGetConvolutionForwardAlgorithm_v7"));
  plan->usable = Choose(forward, count, workspace_bytes_, &plan->forward, &plan->forward_bytes);
  cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  MONSOON_RETURN_IF_ERROR(Check(api_->cudnnGetConvolutionBackwardDataAlgorithm_v7(
                                    handle_, plan->w, plan->y, plan->conv, plan->x,
                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, data),
                                "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
  plan->usable &=
      Choose(data, count, workspace_bytes_, &plan->backward_data, &plan->backward_data_bytes);
  cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  MONSOON_RETURN_IF_ERROR(Check(api_->cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                                    handle_, plan->x, plan->y, plan->conv, plan->w,
                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, filter),
                                "cudnnGetConvolutionBackwardFilterAlgorithm_v7"));
  plan->usable &=
      Choose(filter, count, workspace_bytes_, &plan->backward_filter, &plan->backward_filter_bytes);
  return absl::OkStatus();
}

absl::StatusOr<CudnnLayers::PoolPlan*> CudnnLayers::Pool(const Pool2dGeometry& g, PoolKind kind,
                                                         int batch) {
  std::unique_ptr<PoolPlan>& plan =
      pools_[{g.channels, g.height, g.width, g.size, g.stride, static_cast<int>(kind), batch}];
  if (plan != nullptr) return plan.get();
  plan = std::make_unique<PoolPlan>();
  MONSOON_ASSIGN_OR_RETURN(plan->x, Tensor(batch, g.channels, g.height, g.width));
  MONSOON_ASSIGN_OR_RETURN(plan->y, Tensor(batch, g.channels, g.out_height, g.out_width));
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnCreatePoolingDescriptor(&plan->pool), "cudnnCreatePoolingDescriptor"));
  // Deterministic max pooling; averages over the whole window (no padding to exclude).
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnSetPooling2dDescriptor(
                plan->pool,
                kind == PoolKind::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC
                                       : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                CUDNN_NOT_PROPAGATE_NAN, g.size, g.size, 0, 0, g.stride, g.stride),
            "cudnnSetPooling2dDescriptor"));
  return plan.get();
}

absl::StatusOr<std::pair<cudnnTensorDescriptor_t, cudnnTensorDescriptor_t>> CudnnLayers::Norm(
    int batch, int channels, int pixels) {
  auto& tensors = norms_[{batch, channels, pixels}];
  if (tensors.first == nullptr) {
    MONSOON_ASSIGN_OR_RETURN(tensors.first, Tensor(batch, channels, pixels, 1));
    MONSOON_ASSIGN_OR_RETURN(tensors.second, Tensor(1, channels, 1, 1));
  }
  return tensors;
}

absl::StatusOr<cudnnTensorDescriptor_t> CudnnLayers::Tensor(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t tensor = nullptr;
  MONSOON_RETURN_IF_ERROR(
      Check(api_->cudnnCreateTensorDescriptor(&tensor), "cudnnCreateTensorDescriptor"));
  tensors_.push_back(tensor);
  MONSOON_RETURN_IF_ERROR(Check(
      api_->cudnnSetTensor4dDescriptor(tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w),
      "cudnnSetTensor4dDescriptor"));
  return tensor;
}

absl::Status CudnnLayers::Check(cudnnStatus_t status, const char* what) const {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", api_->cudnnGetErrorString(status)));
}

}  // namespace monsoon
