/*
 * vmafx.h: the C interface of the vmafx staticlib (libvmafx.a) used by
 * FFmpeg's `vmafx` filter (libavfilter/vf_vmafx.c).
 *
 * The filter glue owns the FFmpeg side (options, pads, formats, framesync);
 * everything after (option parsing, frame wrapping, scoring on a worker
 * pool, per-frame metadata, logs, pooled score) lives in Rust behind an
 * opaque handle, one per filter instance. Nothing here depends on FFmpeg's
 * headers: frames travel as plane pointers plus an opaque handle that the
 * host releases through a callback, so one libvmafx.a serves every FFmpeg
 * line.
 *
 * Every function catches Rust panics; none unwinds into C. Functions that
 * can fail return a negative value (or NULL) and leave a message readable
 * with vmafx_filter_last_error().
 */
#ifndef VMAFX_H
#define VMAFX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VMAFX_FILTER_API_VERSION 5

/* Return codes. */
#define VMAFX_OK            0
#define VMAFX_EINVAL      (-1)  /* bad option, bad input, mismatch */
#define VMAFX_ENOTSUP     (-2)  /* well-formed but not supported */
#define VMAFX_EINTERNAL   (-3)  /* scoring failed, panic caught, ... */

typedef struct VmafxFilter VmafxFilter;

/* Callbacks into the host. Both may be called from vmafx worker threads:
 * they must be thread-safe (av_frame_free and av_dict_set on a frame
 * nobody else touches are). */
typedef struct VmafxHost {
    /* Releases a frame handle handed to vmafx (av_frame_free). */
    void (*frame_free)(void *frame);
    /* Sets one metadata entry on an output frame (av_dict_set on
     * frame->metadata). Returns 0 or a negative error. Called on the
     * thread that calls vmafx_filter_pop. */
    int (*frame_set_metadata)(void *frame, const char *key, const char *value);
} VmafxHost;

/* Option strings, with the syntax of FFmpeg's libvmaf filter. NULL means
 * unset (libvmaf's defaults). Copied by vmafx_filter_new. */
typedef struct VmafxFilterOptions {
    const char *model;     /* "version=vmaf_v0.6.1|path=foo.json:name=bar" */
    const char *feature;   /* "name=psnr|name=motion:motion_force_zero=true" */
    const char *log_path;
    const char *log_fmt;   /* xml (default), json, csv, sub */
    const char *pool;      /* mean (default), min, harmonic_mean */
    int n_threads;         /* 0: score on the filter's thread */
    int n_subsample;       /* >= 1 */
    /* How long to wait for a DRM_PRIME frame's fences (its dma-bufs'
     * implicit write fences), in microseconds; <= 0: 1 second. Past it the
     * push fails naming the frame and the fence. */
    int64_t fence_timeout_us;
    /* Where DRM_PRIME and software frames are scored (API version 4):
     * NULL, "" or "cpu": the CPU (dma-bufs read in place through mmap);
     * "hip" or "hip:N": HIP device N (0 by default), each dma-buf imported
     * there once (hipImportExternalMemory) after the same fence wait.
     * vmafx_filter_new fails when the HIP runtime or device is not usable.
     * CUDA frames are scored on their own device; with "hip" they are
     * refused at configure. */
    const char *device;
} VmafxFilterOptions;

/* One input frame as vmafx reads it: plane pointers and line sizes as in
 * AVFrame, the pixel format by its FFmpeg name (av_get_pix_fmt_name), and
 * the handle vmafx takes ownership of (released with host->frame_free once
 * scored; the planes must stay valid until then).
 *
 * A DRM_PRIME frame: pix_fmt "drm_prime", data[0] its AVDRMFrameDescriptor
 * (libavutil/hwcontext_drm.h), sw_format the name of its hw_frames_ctx's
 * sw_format (the layout of the dma-bufs: nv12, p010le, yuv420p, ...).
 * vmafx duplicates the fds, waits for the buffers' implicit fences (up to
 * fence_timeout_us) and reads them in place, on the CPU or, with
 * options.device "hip[:N]", on that HIP device; the handle stays referenced
 * until the imported picture is dropped (on HIP: until the device is past
 * its last read).
 *
 * A CUDA frame (API version 3): pix_fmt "cuda", data[]/linesize[] the
 * device pointers (CUdeviceptr) and pitches of its sw_format's planes, as
 * in the AVFrame, sw_format the name of its hw_frames_ctx's sw_format, and
 * hw_context the CUcontext of its device (AVCUDADeviceContext.cuda_ctx),
 * which must be the one given to vmafx_filter_set_cuda_device for that
 * input. The planes are read in place on the GPU, after the work queued on
 * that device's stream; the handle stays referenced until that reading is
 * done.
 *
 * A HIP frame (API version 5; AV_PIX_FMT_HIP of the HIP hwcontext): pix_fmt
 * "hip", data[]/linesize[] the device pointers and pitches of its
 * sw_format's planes, sw_format as for CUDA; its input must have been
 * declared with vmafx_filter_set_hip_device. Read in place on that HIP
 * device (p010, and nv12/p016 chroma when read, converted there first),
 * after the work queued on the device context's stream.
 *
 * sw_format is ignored for software frames, hw_context for all but CUDA
 * frames. */
typedef struct VmafxFrame {
    const uint8_t *data[4];
    int linesize[4];
    int width;
    int height;
    const char *pix_fmt;
    void *handle;
    const char *sw_format;
    void *hw_context;
} VmafxFrame;

/* Creates an instance and parses the options. Returns NULL on error, with
 * the message copied into err (err_len bytes, NUL-terminated). */
VmafxFilter *vmafx_filter_new(const VmafxFilterOptions *options,
                              const VmafxHost *host,
                              char *err, size_t err_len);

/* Pixel format names the filter accepts (NULL-terminated list). */
const char *const *vmafx_filter_pix_fmts(void);

/* Checks the negotiated inputs: sizes and formats of both must match and
 * be supported. A DRM_PRIME or CUDA input is given by its sw_format, so a
 * drm_prime (or cuda) nv12 input and a software nv12 input match. */
int vmafx_filter_configure(VmafxFilter *f,
                           int main_w, int main_h, const char *main_fmt,
                           int ref_w, int ref_h, const char *ref_fmt);

/* Declares an input (0: main, 1: reference) as CUDA frames (API version
 * 3): `cuda_ctx` and `stream` are its device's AVCUDADeviceContext fields
 * (CUcontext, CUstream; NULL is the default stream), plain pointers that
 * must outlive the filter. Call before vmafx_filter_configure, which then
 * takes that input by its sw_format and scores on the GPU, queued on that
 * stream after the decoder's work; a software input mixed with it is
 * copied to the device. Both inputs CUDA: the same context. Configure fails
 * when the CUDA driver cannot be loaded. */
int vmafx_filter_set_cuda_device(VmafxFilter *f, int input,
                                 void *cuda_ctx, void *stream);

/* Declares an input (0: main, 1: reference) as HIP frames (API version
 * 5): `device` and `stream` are its device's AVHIPDeviceContext fields
 * (the HIP device ordinal, a hipStream_t; NULL is the null stream), the
 * stream outliving the filter. As for CUDA, call before
 * vmafx_filter_configure, which then scores on that HIP device, each frame
 * after the work queued on that stream; a software input mixed with it is
 * copied to the device. Both inputs HIP: the same device and stream. HIP
 * frames beside CUDA frames, or with options.device "hip", are refused at
 * configure, as is a HIP runtime that cannot be loaded. */
int vmafx_filter_set_hip_device(VmafxFilter *f, int input,
                                int device, void *stream);

/* Queues one frame pair for scoring. `main` and `ref` hand over their
 * handles (also on error: vmafx releases them). `output` is the frame to
 * pass downstream once its scores are final (vmafx_filter_pop returns it
 * with its metadata set); it is released with host->frame_free if never
 * popped. May block while the worker pool is full. */
int vmafx_filter_push(VmafxFilter *f, const VmafxFrame *main,
                      const VmafxFrame *ref, void *output);

/* Queues a frame that passes through unscored (eof_action=pass after the
 * reference ended), in order behind the frames before it. */
int vmafx_filter_push_unscored(VmafxFilter *f, void *output);

/* The host found the main input ended while the reference goes on (its
 * frame sync would repeat main's last frame): after `main_frames` frames.
 * Returns an error that says so (the run fails; vmafx_filter_summary then
 * writes the log of the frames scored, marked incomplete). */
int vmafx_filter_main_ended(VmafxFilter *f, int64_t main_frames);

/* Pops the next output frame whose scores are final (metadata set).
 * Returns 1 with *output set, 0 when none is ready, or an error. */
int vmafx_filter_pop(VmafxFilter *f, void **output);

/* End of stream: scores every frame still in flight; afterwards every
 * queued frame can be popped. `reference_frames` is how many reference
 * frames the host saw (for the unequal-count check; -1 to skip it) and
 * `allow_unequal` turns that error into a warning (shortest=1, or an
 * eof_action other than repeat). Idempotent. */
int vmafx_filter_finish(VmafxFilter *f, int64_t reference_frames, int allow_unequal);

/* Finishes if needed, writes the log file (if log_path is set; once) and
 * returns the lines to log at info level ("VMAF score: %f\n" per model, as
 * libvmaf), valid until the next call on f; "" when there is nothing to
 * log; NULL on error (see vmafx_filter_last_error). After any call on f
 * failed, it writes the log of the frames scored before that failure,
 * marked incomplete, and returns NULL with a message that says so. The log
 * file itself is created by vmafx_filter_new (an unwritable path fails
 * there) and removed by vmafx_filter_free if no log was written into it
 * and vmafx created it. */
const char *vmafx_filter_summary(VmafxFilter *f);

/* Warnings produced since the last call (one per line), or NULL. */
const char *vmafx_filter_take_warnings(VmafxFilter *f);

/* The last error message (never NULL; empty when none). */
const char *vmafx_filter_last_error(const VmafxFilter *f);

/* Frames scored so far, and host copies made (nv12/p010 chroma
 * deinterleaving, p010 luma shifts, negative line sizes): a debug counter.
 * CUDA and HIP frames are read on their device: they never count. */
uint64_t vmafx_filter_frames_scored(const VmafxFilter *f);
uint64_t vmafx_filter_host_copies(const VmafxFilter *f);
/* CUDA frames handed to the GPU scoring context in place (API version 3),
 * DRM_PRIME frames imported on the HIP device (API version 4), and HIP
 * frames (API version 5), in place or converted on the device. */
uint64_t vmafx_filter_device_frames(const VmafxFilter *f);

/* Releases everything, queued frames included. NULL is a no-op. */
void vmafx_filter_free(VmafxFilter *f);

#ifdef __cplusplus
}
#endif

#endif /* VMAFX_H */
