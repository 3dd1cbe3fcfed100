// The exports of tools/hip-standin/exports.def's VX_EXPORT_APART lines:
// hip_runtime_api.h declares these names with C linkage, so in standin.cpp
// AMD's inline NVIDIA definition is a local symbol of the same name and a
// global one beside it would not assemble. Here, without the HIP headers,
// each forwards to standin.cpp's vx_apart_<name> (which calls the header's).
extern "C" {
int vx_apart_hipGetDeviceProperties(void *prop, int device);
__attribute__((visibility("default"))) int hipGetDeviceProperties(void *prop, int device) {
    return vx_apart_hipGetDeviceProperties(prop, device);
}
}
