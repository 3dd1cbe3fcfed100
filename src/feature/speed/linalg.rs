//! SpEED's small dense linear algebra in `f32`, as libvmaf 3.2.0's
//! `feature/speed.c` does it: the eigenvalues of the 25x25 covariance
//! matrix (Householder tridiagonalisation, then implicit-shift QR, after
//! GSL) and the solution of K X = Y by a Householder QR decomposition and
//! back substitution.
//!
//! The operation order is libvmaf's, step for step: these are float
//! computations whose bits depend on it. Where C promotes to `double`
//! (a double constant, `sqrt`), so does this code.

/// libvmaf's `EIGENVALUE_EPS`.
pub(crate) const EPS: f64 = 1e-6;
const MAX_ITERS: usize = 500;

/// A row-major square matrix of `n` x `n` floats.
fn at(a: &[f32], n: usize, i: usize, j: usize) -> f32 {
    a[i * n + j]
}

fn sign(x: f32) -> f32 {
    if x >= 0.0 {
        1.0
    } else {
        -1.0
    }
}

/// `sqrt(x * x + y * y)`: float operands, a double root, stored as float.
fn pythagoras(x: f32, y: f32) -> f32 {
    ((x * x + y * y) as f64).sqrt() as f32
}

/// `sqrt` of a float sum of squares, stored as float.
fn sqrt_f(x: f32) -> f32 {
    (x as f64).sqrt() as f32
}

/// The eigenvalues of the symmetric `n` x `n` matrix `a` (not modified),
/// in the order libvmaf's QR iteration leaves them.
pub(crate) fn eigenvalues(a_in: &[f32], n: usize, out: &mut [f32]) {
    if n == 1 {
        out[0] = a_in[0];
        return;
    }
    let mut a = a_in[..n * n].to_vec();
    let mut d = vec![0.0f32; n];
    let mut sd = vec![0.0f32; n];
    tridiagonalize(&mut a, n, &mut d, &mut sd);
    tridiagonal_eigenvalues(&mut d, &mut sd, n);
    out[..n].copy_from_slice(&d);
}

/// `compute_householder_transform`: the reflection that zeroes column
/// `col` below row `start + 1`; returns tau and leaves v in the column.
fn householder(a: &mut [f32], col: usize, start: usize, n: usize) -> f32 {
    if n - start == 1 {
        return 0.0;
    }
    let mut norm = 0.0f32;
    for i in start + 1..n {
        norm += at(a, n, i, col) * at(a, n, i, col);
    }
    let xnorm = sqrt_f(norm);
    if xnorm == 0.0 {
        return 0.0;
    }
    let alpha = at(a, n, start, col);
    let beta = -sign(alpha) * pythagoras(alpha, xnorm);
    let tau = (beta - alpha) / beta;
    let s = alpha - beta;
    if s != 0.0 {
        for i in start..n {
            a[i * n + col] /= s;
        }
        a[start * n + col] = beta;
    }
    tau
}

/// `convert_to_tridiagonal` (after `gsl_linalg_symmtd_decomp`): the
/// diagonal into `d`, the subdiagonal into `sd`.
fn tridiagonalize(a: &mut [f32], n: usize, d: &mut [f32], sd: &mut [f32]) {
    let mut v = vec![0.0f32; n];
    let mut x = vec![0.0f32; n];
    for i in 0..n.saturating_sub(2) {
        let tau = householder(a, i, i + 1, n);
        for j in i + 1..n {
            v[j] = at(a, n, j, i);
        }
        if tau != 0.0 {
            a[(i + 1) * n + i] = v[i + 1];
            v[i + 1] = 1.0;
            let s = i + 1;
            // x = tau A v
            for r in s..n {
                x[r] = 0.0;
                for c in s..n {
                    x[r] += tau * at(a, n, r, c) * v[c];
                }
            }
            // x -= 0.5 tau (x . v) v
            let mut xv = 0.0f32;
            for r in s..n {
                xv += x[r] * v[r];
            }
            let alpha = (-0.5 * tau as f64 * xv as f64) as f32;
            for r in s..n {
                x[r] += alpha * v[r];
            }
            // A -= x v' + v x'
            for r in s..n {
                for c in s..n {
                    a[r * n + c] -= x[r] * v[c] + v[r] * x[c];
                }
            }
        }
    }
    for i in 0..n {
        d[i] = at(a, n, i, i);
    }
    for i in 0..n - 1 {
        sd[i] = at(a, n, i + 1, i);
    }
}

fn chop_small_elements(d: &[f32], sd: &mut [f32], n: usize) {
    for i in 0..n - 1 {
        if (sd[i].abs() as f64) < EPS * (d[i].abs() + d[i + 1].abs()) as f64 {
            sd[i] = 0.0;
        }
    }
}

fn trailing_eigenvalue(d: &[f32], sd: &[f32], n: usize) -> f32 {
    let ta = d[n - 2];
    let tb = d[n - 1];
    let tab = sd[n - 2];
    let dt = ((ta - tb) as f64 / 2.0) as f32;
    if dt > 0.0 {
        tb - tab * (tab / (dt + pythagoras(dt, tab)))
    } else if dt == 0.0 {
        tb - tab.abs()
    } else {
        tb + tab * (tab / (-dt + pythagoras(dt, tab)))
    }
}

/// `create_givens`: (c, s) with the root and reciprocal in double.
fn givens(a: f32, b: f32) -> (f32, f32) {
    if b == 0.0 {
        (1.0, 0.0)
    } else if b.abs() > a.abs() {
        let t = -a / b;
        let s1 = (1.0 / ((1.0 + t * t) as f64).sqrt()) as f32;
        (s1 * t, s1)
    } else {
        let t = -b / a;
        let c1 = (1.0 / ((1.0 + t * t) as f64).sqrt()) as f32;
        (c1, c1 * t)
    }
}

/// `qr_step`: one implicit-shift QR sweep over the block `d[..n]`.
fn qr_step(d: &mut [f32], sd: &mut [f32], n: usize) {
    let mut mu = trailing_eigenvalue(d, sd, n);
    if EPS * mu.abs() as f64 > (d[0].abs() + sd[0].abs()) as f64 {
        mu = 0.0;
    }
    let mut x = d[0] - mu;
    let mut z = sd[0];
    let mut bk = 0.0f32;
    let mut zk = 0.0f32;
    let mut ap = d[0];
    let mut bp = sd[0];
    let mut aq = d[1];
    if n == 2 {
        let (c, s) = givens(x, z);
        let ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
        let bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
        let aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
        d[0] = ap1;
        sd[0] = bp1;
        d[1] = aq1;
        return;
    }
    let mut bq = sd[1];
    for k in 0..n - 1 {
        let (c, s) = givens(x, z);
        let bk1 = c * bk - s * zk;
        let ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
        let bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
        let zp1 = -s * bq;
        let aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
        let bq1 = c * bq;
        let ak = ap1;
        bk = bp1;
        zk = zp1;
        ap = aq1;
        bp = bq1;
        if k < n - 2 {
            aq = d[k + 2];
        }
        if k + 3 < n {
            bq = sd[k + 2];
        }
        d[k] = ak;
        if k > 0 {
            sd[k - 1] = bk1;
        }
        if k < n - 2 {
            sd[k + 1] = bp;
        }
        x = bk;
        z = zk;
    }
    d[n - 1] = ap;
    sd[n - 2] = bk;
}

/// `compute_eigenvalues_tridiagonal` (after `gsl_eigen_symm`): leaves the
/// eigenvalues in `d`. Like libvmaf, stops after 500 sweeps whatever is
/// left.
fn tridiagonal_eigenvalues(d: &mut [f32], sd: &mut [f32], n: usize) {
    chop_small_elements(d, sd, n);
    let mut b = n - 1;
    let mut iter = 0;
    while b > 0 && iter < MAX_ITERS {
        if sd[b - 1] == 0.0 {
            b -= 1;
            continue;
        }
        let mut a = b - 1;
        while a > 0 {
            if sd[a - 1] == 0.0 {
                break;
            }
            a -= 1;
        }
        let block = b - a + 1;
        qr_step(&mut d[a..], &mut sd[a..], block);
        chop_small_elements(&d[a..], &mut sd[a..], block);
        iter += 1;
    }
}

/// `matrix_mul`: `dst = x y` (x: r x k, y: k x c), accumulated over k in
/// order.
fn mat_mul(dst: &mut [f32], x: &[f32], y: &[f32], r: usize, k: usize, c: usize) {
    dst[..r * c].fill(0.0);
    for i in 0..r {
        for kk in 0..k {
            let xv = x[i * k + kk];
            for j in 0..c {
                dst[i * c + j] += xv * y[kk * c + j];
            }
        }
    }
}

fn transpose(m: &mut [f32], n: usize) {
    for i in 0..n {
        for j in 0..i {
            m.swap(i * n + j, j * n + i);
        }
    }
}

fn vector_norm(v: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for x in v {
        sum += x * x;
    }
    sqrt_f(sum)
}

/// Scratch for [`solve`], kept between frames.
#[derive(Default)]
pub(crate) struct SolveScratch {
    a: Vec<f32>,
    q: Vec<f32>,
    r: Vec<f32>,
    tmp_q: Vec<f32>,
    tmp_z: Vec<f32>,
    rect: Vec<f32>,
}

/// `matrix_qr_decomposition`: A = Q R by Householder reflections, as
/// libvmaf writes it (its reflection sign comes from A's diagonal, not the
/// reduced column's). Leaves Q transposed back as libvmaf returns it.
fn qr_decompose(s: &mut SolveScratch, n: usize) {
    let SolveScratch { a, q, r, tmp_q, tmp_z, .. } = s;
    tmp_z.copy_from_slice(a);
    q.fill(0.0);
    for i in 0..n {
        q[i * n + i] = 1.0;
    }
    let mut vec = vec![0.0f32; n];
    for k in 0..n - 1 {
        // matrix_minor: the first k rows and columns become the identity's.
        for i in 0..n {
            for j in 0..n {
                if i < k || j < k {
                    tmp_z[i * n + j] = if i == j { 1.0 } else { 0.0 };
                }
            }
        }
        for i in 0..n {
            vec[i] = tmp_z[i * n + k];
        }
        let norm = vector_norm(&vec);
        vec[k] += sign(a[k * n + k]) * norm;
        let len = vector_norm(&vec);
        for v in vec.iter_mut() {
            *v /= len;
        }
        // I - 2 v v'
        for i in 0..n {
            for j in 0..n {
                tmp_q[i * n + j] = -2.0 * vec[i] * vec[j];
            }
        }
        for i in 0..n {
            tmp_q[i * n + i] += 1.0;
        }
        mat_mul(r, tmp_q, tmp_z, n, n, n);
        tmp_z.copy_from_slice(r);
        mat_mul(r, tmp_q, q, n, n, n);
        q.copy_from_slice(r);
    }
    mat_mul(r, q, a, n, n, n);
    transpose(q, n);
}

/// `solve_linear_system`: X (n x cols) with K X = Y, by K = Q R and back
/// substitution. `Err(())` where R has a diagonal element under 1e-6 in
/// magnitude (X is then partly written, as libvmaf leaves it).
pub(crate) fn solve(k: &[f32], n: usize, y: &[f32], cols: usize, x: &mut [f32], s: &mut SolveScratch) -> Result<(), ()> {
    for m in [&mut s.a, &mut s.q, &mut s.r, &mut s.tmp_q, &mut s.tmp_z] {
        m.clear();
        m.resize(n * n, 0.0);
    }
    s.a.copy_from_slice(&k[..n * n]);
    qr_decompose(s, n);
    transpose(&mut s.q, n);
    s.rect.clear();
    s.rect.resize(n * cols, 0.0);
    mat_mul(&mut s.rect, &s.q, &y[..n * cols], n, n, cols);
    let (r, b) = (&s.r, &s.rect);
    for i in (0..n).rev() {
        let den = r[i * n + i];
        if (den.abs() as f64) < EPS {
            return Err(());
        }
        for j in 0..cols {
            let mut term = b[i * cols + j];
            for kk in i + 1..n {
                term -= x[kk * cols + j] * r[i * n + kk];
            }
            x[i * cols + j] = term / den;
        }
    }
    Ok(())
}
