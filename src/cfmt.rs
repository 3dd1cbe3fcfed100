//! C's `printf` number formats, where vmafx must print what libvmaf or
//! FFmpeg print: `%g` in feature names (`integer_adm2_egl_1`), `%.17g` in
//! frame metadata (round-trips every double), `%.Nf` in logs.
//!
//! Rust's `{:.N}` and `{:.Ne}` print the exact binary value correctly
//! rounded, ties to even, as glibc does, so only the layout is ours.

/// `printf("%.{precision}g", x)`: `precision` significant digits, fixed
/// notation when the decimal exponent lies in [-4, precision), else
/// `d.ddde±XX`; trailing zeros (and a trailing point) dropped.
pub(crate) fn g(x: f64, precision: usize) -> String {
    if let Some(s) = non_finite(x) {
        return s;
    }
    let p = precision.max(1) as i32;
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // The exponent after rounding to p significant digits decides the form.
    let sci = format!("{:.*e}", (p - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    if (-4..p).contains(&exp) {
        trim_zeros(&format!("{:.*}", (p - 1 - exp) as usize, x)).to_owned()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_zeros(mantissa), exp.abs())
    }
}

/// `printf("%.{precision}f", x)`.
pub(crate) fn fixed(x: f64, precision: usize) -> String {
    if let Some(s) = non_finite(x) {
        return s;
    }
    // Keeps the sign of negative zero and of negatives that round to zero,
    // as glibc does.
    format!("{:.*}", precision, x)
}

fn non_finite(x: f64) -> Option<String> {
    if x.is_nan() {
        Some(if x.is_sign_negative() { "-nan" } else { "nan" }.into())
    } else if x.is_infinite() {
        Some(if x < 0.0 { "-inf" } else { "inf" }.into())
    } else {
        None
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::approx_constant, reason = "a value to print, not e")]
    fn g6_matches_printf() {
        for (x, want) in [
            (1.0, "1"),
            (100.0, "100"),
            (1.2, "1.2"),
            (0.5, "0.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1234567.0, "1.23457e+06"),
            (123456.0, "123456"),
            (2.718281828, "2.71828"),
            (999999.5, "1e+06"),
            (-0.0, "-0"),
        ] {
            assert_eq!(g(x, 6), want, "{x}");
        }
    }

    #[test]
    fn fixed_matches_printf() {
        assert_eq!(fixed(0.5, 0), "0");
        assert_eq!(fixed(1.5, 0), "2");
        assert_eq!(fixed(-0.0000001, 6), "-0.000000");
        assert_eq!(fixed(f64::NAN, 6), "nan");
    }
}
