//! Where frames are computed: the CPU, or a GPU through [`gpu`] (CUDA or
//! HIP, loaded at run time). Device kernels are integer twins of the CPU
//! kernels (motion SAD, PSNR SSE) and must match them bit for bit; every
//! floating-point step stays on the host, in the CPU's code.

pub mod gpu;
