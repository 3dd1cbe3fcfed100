//! Metadata number format: C's `%.17g`, so every double round-trips
//! exactly through its text (`strtod`, Rust's `parse::<f64>`).
//!
//! 17 significant digits, the shortest form of `%g`: fixed notation when
//! the decimal exponent lies in [-4, 17), else `d.ddde±XX`; trailing zeros
//! (and a trailing point) dropped. Rust's `{:.16e}` rounds exactly as glibc
//! does (correctly rounded, ties to even), so the digits are the same.

pub fn format_g17(v: f64) -> String {
    crate::cfmt::g(v, 17)
}

#[cfg(test)]
mod tests {
    use super::format_g17;

    #[test]
    fn matches_printf_g17() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (100.0, "100"),
            (0.1, "0.10000000000000001"),
            (95.123456789, "95.123456789000002"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (1e17, "1e+17"),
            (12345678901234567.0, "12345678901234568"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "4.9406564584124654e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5, "-2.5"),
        ];
        for &(v, want) in cases {
            assert_eq!(format_g17(v), want, "{v:e}");
            assert_eq!(format_g17(v).parse::<f64>().unwrap().to_bits(), v.to_bits());
        }
    }
}
