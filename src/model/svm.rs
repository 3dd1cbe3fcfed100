//! libsvm as vendored in libvmaf 3.2.0 (`svm.cpp`): the model text parser
//! (`SVMModelParser`) and prediction for regression models
//! (`svm_predict` → `svm_predict_values`, `Kernel::k_function`).
//!
//! Numbers in the model text are read as C++ `istream >> double` reads
//! them (libstdc++ hands the text to `strtod`); Rust's `f64` parser is
//! correctly rounded too, so the doubles are the same. Prediction keeps
//! libsvm's summation order exactly: the kernel walks both sparse vectors
//! in index order, and the decision sum runs over the support vectors in
//! file order, minus rho at the end.

use crate::{Error, Result};

/// libsvm's `svm_type_table` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmType {
    CSvc,
    NuSvc,
    OneClass,
    EpsilonSvr,
    NuSvr,
}

/// libsvm's `kernel_type_table` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelType {
    Linear,
    Polynomial,
    Rbf,
    Sigmoid,
    Precomputed,
}

/// One non-zero entry of a sparse vector (`svm_node`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SvmNode {
    pub index: i32,
    pub value: f64,
}

/// A libsvm model that predicts a real value (nu-SVR, epsilon-SVR or
/// one-class).
#[derive(Clone, Debug)]
pub struct SvmModel {
    pub svm_type: SvmType,
    pub kernel: KernelType,
    pub degree: i32,
    pub gamma: f64,
    pub coef0: f64,
    /// rho[0] (regression models have one decision function).
    pub rho: f64,
    /// Coefficient of each support vector (`sv_coef[0]`).
    pub sv_coef: Vec<f64>,
    /// Support vectors, sparse, in file order.
    pub support_vectors: Vec<Vec<SvmNode>>,
}

fn bad(what: impl Into<String>) -> Error {
    Error::Model(format!("libsvm model: {}", what.into()))
}

fn parse_f64(tok: &str, what: &str) -> Result<f64> {
    tok.parse::<f64>().map_err(|_| bad(format!("{what}: '{tok}' is not a number")))
}

fn next<'a>(what: &str, tokens: &mut std::str::SplitAsciiWhitespace<'a>) -> Result<&'a str> {
    tokens.next().ok_or_else(|| bad(format!("missing value of {what}")))
}

fn parse_i32(tok: &str, what: &str) -> Result<i32> {
    tok.parse::<i32>().map_err(|_| bad(format!("{what}: '{tok}' is not an integer")))
}

/// The header's fields as read, before any is required.
#[derive(Default)]
struct RawHeader {
    svm_type: Option<SvmType>,
    kernel: Option<KernelType>,
    degree: i32,
    gamma: f64,
    coef0: f64,
    nr_class: Option<i32>,
    total_sv: Option<i32>,
    rho: Option<Vec<f64>>,
}

/// The header's fields a regression prediction needs, each present and in
/// range.
struct Header {
    svm_type: SvmType,
    kernel: KernelType,
    degree: i32,
    gamma: f64,
    coef0: f64,
    total_sv: usize,
    rho: f64,
}

fn parse_svm_type(v: &str) -> Result<SvmType> {
    Ok(match v {
        "c_svc" => SvmType::CSvc,
        "nu_svc" => SvmType::NuSvc,
        "one_class" => SvmType::OneClass,
        "epsilon_svr" => SvmType::EpsilonSvr,
        "nu_svr" => SvmType::NuSvr,
        _ => return Err(bad(format!("unknown svm_type '{v}'"))),
    })
}

fn parse_kernel_type(v: &str) -> Result<KernelType> {
    Ok(match v {
        "linear" => KernelType::Linear,
        "polynomial" => KernelType::Polynomial,
        "rbf" => KernelType::Rbf,
        "sigmoid" => KernelType::Sigmoid,
        "precomputed" => KernelType::Precomputed,
        _ => return Err(bad(format!("unknown kernel_type '{v}'"))),
    })
}

/// Values per class pair (`rho`, `probA`, `probB`): n(n-1)/2.
fn per_class_pair(n: i32) -> usize {
    (n.max(0) as i64 * (n as i64 - 1) / 2).max(0) as usize
}

impl RawHeader {
    /// Reads the whitespace separated tokens before "SV" (libsvm splits on
    /// ' ' and '\n'; the values are read with operator>>): every key known,
    /// every value a number of its type.
    fn read(header: &str) -> Result<RawHeader> {
        let mut tokens = header.split_ascii_whitespace();
        let mut h = RawHeader::default();
        while let Some(key) = tokens.next() {
            match key {
                "svm_type" => h.svm_type = Some(parse_svm_type(next("svm_type", &mut tokens)?)?),
                "kernel_type" => h.kernel = Some(parse_kernel_type(next("kernel_type", &mut tokens)?)?),
                "degree" => h.degree = parse_i32(next("degree", &mut tokens)?, "degree")?,
                "gamma" => h.gamma = parse_f64(next("gamma", &mut tokens)?, "gamma")?,
                "coef0" => h.coef0 = parse_f64(next("coef0", &mut tokens)?, "coef0")?,
                "nr_class" => h.nr_class = Some(parse_i32(next("nr_class", &mut tokens)?, "nr_class")?),
                "total_sv" => h.total_sv = Some(parse_i32(next("total_sv", &mut tokens)?, "total_sv")?),
                "rho" => {
                    let n = h.nr_class.ok_or_else(|| bad("rho before nr_class"))?;
                    let count = per_class_pair(n);
                    let mut v = Vec::with_capacity(count);
                    for _ in 0..count {
                        v.push(parse_f64(next("rho", &mut tokens)?, "rho")?);
                    }
                    h.rho = Some(v);
                }
                "label" | "probA" | "probB" | "nr_sv" => {
                    // Classification and probability data: regression
                    // prediction never reads them.
                    let n = h.nr_class.ok_or_else(|| bad(format!("{key} before nr_class")))?;
                    let count = match key {
                        "label" | "nr_sv" => n.max(0) as usize,
                        _ => per_class_pair(n),
                    };
                    for _ in 0..count {
                        next(key, &mut tokens)?;
                    }
                }
                other => return Err(bad(format!("unknown text '{other}' in the header"))),
            }
        }
        Ok(h)
    }

    /// A regression model's header: a type and kernel vmafx predicts with
    /// (no classification, no precomputed kernel), two classes, a support
    /// vector count and a rho.
    fn require_regression(self) -> Result<Header> {
        let svm_type = self.svm_type.ok_or_else(|| bad("no svm_type"))?;
        let kernel = self.kernel.ok_or_else(|| bad("no kernel_type"))?;
        match svm_type {
            SvmType::OneClass | SvmType::EpsilonSvr | SvmType::NuSvr => {}
            SvmType::CSvc | SvmType::NuSvc => {
                return Err(Error::NotSupported(
                    "libsvm classification models (c_svc, nu_svc); VMAF models are regressions".into(),
                ))
            }
        }
        if kernel == KernelType::Precomputed {
            return Err(Error::NotSupported("libsvm precomputed kernels".into()));
        }
        let nr_class = self.nr_class.ok_or_else(|| bad("no nr_class"))?;
        if nr_class != 2 {
            return Err(bad(format!("nr_class {nr_class} for a regression model (expected 2)")));
        }
        let total_sv = self.total_sv.ok_or_else(|| bad("no total_sv"))?;
        if total_sv < 0 {
            return Err(bad("negative total_sv"));
        }
        let rho = self.rho.and_then(|r| r.first().copied()).ok_or_else(|| bad("no rho"))?;
        let RawHeader { degree, gamma, coef0, .. } = self;
        Ok(Header { svm_type, kernel, degree, gamma, coef0, total_sv: total_sv as usize, rho })
    }
}

/// The support vectors after "SV": `total_sv` lines, each
/// "coef index:value index:value ...", indices not negative.
fn parse_support_vectors(body: &str, total_sv: usize) -> Result<(Vec<f64>, Vec<Vec<SvmNode>>)> {
    let mut lines = body.split('\n');
    let mut sv_coef = Vec::with_capacity(total_sv);
    let mut support_vectors = Vec::with_capacity(total_sv);
    for i in 0..total_sv {
        let line = lines.next().ok_or_else(|| bad(format!("only {i} of {total_sv} support vectors")))?;
        let mut toks = line.split_ascii_whitespace();
        let coef = toks.next().ok_or_else(|| bad(format!("support vector {i}: no coefficient")))?;
        sv_coef.push(parse_f64(coef, "support vector coefficient")?);
        let mut nodes = Vec::new();
        for t in toks {
            let (index, value) = t.split_once(':').ok_or_else(|| bad(format!("support vector {i}: '{t}'")))?;
            let index = parse_i32(index, "support vector index")?;
            if index < 0 {
                return Err(bad(format!("support vector {i}: negative index {index}")));
            }
            nodes.push(SvmNode { index, value: parse_f64(value, "support vector value")? });
        }
        support_vectors.push(nodes);
    }
    Ok((sv_coef, support_vectors))
}

impl SvmModel {
    /// Parses libsvm's model text (the `"model"` string of a JSON model):
    /// the header read, then required to be a regression's, then the
    /// support vectors.
    pub fn parse(text: &str) -> Result<SvmModel> {
        let (header, body) = split_header(text).ok_or_else(|| bad("no 'SV' line"))?;
        let Header { svm_type, kernel, degree, gamma, coef0, total_sv, rho } =
            RawHeader::read(header)?.require_regression()?;
        let (sv_coef, support_vectors) = parse_support_vectors(body, total_sv)?;
        Ok(SvmModel { svm_type, kernel, degree, gamma, coef0, rho, sv_coef, support_vectors })
    }

    /// `svm_predict` for a regression model. `x` is the query, sorted by
    /// index, without the -1 terminator.
    pub fn predict(&self, x: &[SvmNode]) -> f64 {
        let mut sum = 0.0;
        for (coef, sv) in self.sv_coef.iter().zip(&self.support_vectors) {
            sum += coef * self.kernel(x, sv);
        }
        sum -= self.rho;
        if self.svm_type == SvmType::OneClass {
            if sum > 0.0 { 1.0 } else { -1.0 }
        } else {
            sum
        }
    }

    /// `Kernel::k_function`.
    fn kernel(&self, x: &[SvmNode], y: &[SvmNode]) -> f64 {
        match self.kernel {
            KernelType::Linear => dot(x, y),
            KernelType::Polynomial => powi(self.gamma * dot(x, y) + self.coef0, self.degree),
            KernelType::Rbf => (-self.gamma * rbf_distance(x, y)).exp(),
            KernelType::Sigmoid => (self.gamma * dot(x, y) + self.coef0).tanh(),
            // Refused at parse time.
            KernelType::Precomputed => 0.0,
        }
    }
}

/// Splits the text after the "SV" token (and the one separator libsvm's
/// tokenizer consumes with it).
fn split_header(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    // libsvm's read_next: tokens end at ' ' or '\n'.
    while i <= bytes.len() {
        let end = i == bytes.len() || bytes[i] == b' ' || bytes[i] == b'\n';
        if end {
            if &text[start..i] == "SV" {
                let rest = if i < bytes.len() { &text[i + 1..] } else { "" };
                return Some((&text[..start], rest));
            }
            start = i + 1;
        }
        i += 1;
    }
    None
}

/// `Kernel::dot`.
fn dot(x: &[SvmNode], y: &[SvmNode]) -> f64 {
    let (mut i, mut j) = (0, 0);
    let mut sum = 0.0;
    while i < x.len() && j < y.len() {
        if x[i].index == y[j].index {
            sum += x[i].value * y[j].value;
            i += 1;
            j += 1;
        } else if x[i].index > y[j].index {
            j += 1;
        } else {
            i += 1;
        }
    }
    sum
}

/// The squared distance inside the RBF case of `k_function`, summed in the
/// same order as libsvm's merge of the two sparse vectors.
fn rbf_distance(x: &[SvmNode], y: &[SvmNode]) -> f64 {
    let (mut i, mut j) = (0, 0);
    let mut sum = 0.0;
    while i < x.len() && j < y.len() {
        if x[i].index == y[j].index {
            let d = x[i].value - y[j].value;
            sum += d * d;
            i += 1;
            j += 1;
        } else if x[i].index > y[j].index {
            sum += y[j].value * y[j].value;
            j += 1;
        } else {
            sum += x[i].value * x[i].value;
            i += 1;
        }
    }
    for n in &x[i..] {
        sum += n.value * n.value;
    }
    for n in &y[j..] {
        sum += n.value * n.value;
    }
    sum
}

/// libsvm's `powi`: square-and-multiply.
fn powi(base: f64, times: i32) -> f64 {
    let (mut tmp, mut ret) = (base, 1.0);
    let mut t = times;
    while t > 0 {
        if t % 2 == 1 {
            ret *= tmp;
        }
        tmp *= tmp;
        t /= 2;
    }
    ret
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = "svm_type nu_svr\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\nrho -1.5\nSV\n2 1:0.5 3:1 \n-1 2:0.25 \n";

    #[test]
    fn parses_and_predicts() {
        let m = SvmModel::parse(TINY).unwrap();
        assert_eq!(m.support_vectors.len(), 2);
        assert_eq!(m.support_vectors[0], vec![SvmNode { index: 1, value: 0.5 }, SvmNode { index: 3, value: 1.0 }]);
        let x = [SvmNode { index: 1, value: 0.5 }, SvmNode { index: 2, value: 0.0 }, SvmNode { index: 3, value: 1.0 }];
        // First SV equals x: kernel 1. Second: distance 0.25 + 0.0625 + 1... merge order.
        let d2 = {
            let mut s = 0.0;
            s += 0.5f64 * 0.5; // x1 alone
            let d = 0.0f64 - 0.25;
            s += d * d; // index 2 both
            s += 1.0; // x3 alone
            s
        };
        let expect = 2.0 * 1.0 - (-0.5 * d2).exp() + 1.5;
        assert_eq!(m.predict(&x).to_bits(), expect.to_bits());
    }

    #[test]
    fn refuses_classification_and_garbage() {
        let c = TINY.replace("nu_svr", "c_svc");
        assert!(matches!(SvmModel::parse(&c), Err(Error::NotSupported(_))));
        assert!(SvmModel::parse("svm_type nu_svr\n").is_err());
        assert!(SvmModel::parse(&TINY.replace("total_sv 2", "total_sv 3")).is_err());
        assert!(SvmModel::parse(&TINY.replace("gamma 0.5", "gamma x")).is_err());
    }

    #[test]
    fn powi_is_square_and_multiply() {
        assert_eq!(powi(3.0, 0), 1.0);
        assert_eq!(powi(3.0, 5), 243.0);
        assert_eq!(powi(1.1, 3), 1.1 * (1.1f64 * 1.1));
    }
}
