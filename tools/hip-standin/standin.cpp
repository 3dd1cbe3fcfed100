// libamdhip64.so for NVIDIA GPUs: AMD's HIP headers compiled for their
// NVIDIA platform (__HIP_PLATFORM_NVIDIA__) define every hip*/hiprtc* call
// as an inline mapping onto the CUDA runtime, driver and NVRTC; this file
// only exports those definitions under the real names, so vmafx's HIP lane
// (which dlopens libamdhip64) runs its own host code on an NVIDIA GPU.
// Built by scripts/hip-standin; what it proves is in docs/gpu.md.
//
// The header functions are `inline static` (internal, mangled symbols); an
// exported wrapper with an asm label takes the C name without a clash.
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>

#include <string>
#include <vector>

// The wrapper's parameters are the header's: the cast picks the header
// function of exactly that type, or does not compile.
#define VX_EXPORT(R, name, params, args)                                                   \
    extern "C" __attribute__((visibility("default"))) R vx_export_##name params __asm__(#name); \
    R vx_export_##name params { return ::name args; }                                      \
    [[maybe_unused]] static constexpr auto vx_same_type_##name = static_cast<decltype(&vx_export_##name)>(&::name);
#define VX_EXPORT_APART(R, name, params, args)                                              \
    extern "C" R vx_apart_##name params { return ::name args; }                                \
    [[maybe_unused]] static constexpr auto vx_same_type_##name = static_cast<decltype(&vx_apart_##name)>(&::name);
#include "exports.def"

// hiprtcCompileProgram: the one call that is not a bare export. vmafx's HIP
// lane asks hiprtc for ROCm's options (src/device/gpu/hip.rs, `options`);
// on this platform hiprtc is NVRTC, which takes its own. Each is said in
// NVRTC's words, nothing else changes:
//   --offload-arch=gfx…  -> --gpu-architecture=compute_XY of the current device
//   -ffp-contract=off    -> --fmad=false (no FMA contraction, as the CUDA lane)
//   -O3                  -> (NVRTC optimises by default)
extern "C" __attribute__((visibility("default"))) hiprtcResult
vx_export_hiprtcCompileProgram(hiprtcProgram p, int n, const char **options) __asm__("hiprtcCompileProgram");
hiprtcResult vx_export_hiprtcCompileProgram(hiprtcProgram p, int n, const char **options) {
    std::vector<std::string> said;
    for (int i = 0; i < n; i++) {
        std::string o = options[i];
        if (o.rfind("--offload-arch=", 0) == 0) {
            int device = 0, major = 0, minor = 0;
            if (hipGetDevice(&device) != hipSuccess ||
                hipDeviceGetAttribute(&major, hipDeviceAttributeComputeCapabilityMajor, device) != hipSuccess ||
                hipDeviceGetAttribute(&minor, hipDeviceAttributeComputeCapabilityMinor, device) != hipSuccess)
                return HIPRTC_ERROR_INVALID_OPTION;
            said.push_back("--gpu-architecture=compute_" + std::to_string(major) + std::to_string(minor));
        } else if (o == "-ffp-contract=off") {
            said.push_back("--fmad=false");
        } else if (o != "-O3") {
            said.push_back(o);
        }
    }
    std::vector<const char *> argv;
    for (const std::string &s : said) argv.push_back(s.c_str());
    return hiprtcCompileProgram(p, (int)argv.size(), argv.data());
}
static_assert(std::is_same_v<decltype(&vx_export_hiprtcCompileProgram), decltype(&::hiprtcCompileProgram)>);
