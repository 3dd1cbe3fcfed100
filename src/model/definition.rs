//! A libvmaf JSON model as read by libvmaf 3.2.0 (`read_json_model.c`:
//! `model_parse`, `parse_model_dict` and its helpers) and scored as
//! `predict.c` scores it (`vmaf_predict_score_at_index`: normalize, libsvm
//! predict, denormalize, transform, clip).
//!
//! A [`ModelDefinition`] knows only the libvmaf feature names the model
//! reads and their option dictionaries; tying them to vmafx's extractors is
//! [`super::Model`]'s job.

use super::json::{self, Json};
use super::svm::{SvmModel, SvmNode};
use crate::feature::naming::format_g;
use crate::{Error, Result};

/// libvmaf's `MAX_FEATURE_COUNT`.
const MAX_FEATURE_COUNT: usize = 64;
/// libvmaf's `MAX_KNOT_COUNT`.
const MAX_KNOT_COUNT: usize = 10;

/// `model_type` of the model file (libvmaf's `VmafModelType`). libvmaf
/// scores a single `model_dict` the same way whatever this says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelType {
    /// No `model_type` key.
    Unknown,
    /// "LIBSVMNUSVR"
    SvmNuSvr,
    /// "BOOTSTRAP_LIBSVMNUSVR"
    BootstrapSvmNuSvr,
    /// "RESIDUEBOOTSTRAP_LIBSVMNUSVR"
    ResidueBootstrapSvmNuSvr,
}

/// `norm_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormType {
    /// "none"
    None,
    /// "linear_rescale": feature' = slope * feature + intercept.
    LinearRescale,
}

/// One feature of the model: libvmaf's name and option dictionary.
#[derive(Clone, Debug, PartialEq)]
pub struct DefinedFeature {
    /// As in `feature_names` ("VMAF_integer_feature_adm2_score").
    pub name: String,
    /// `feature_opts_dicts` entry as libvmaf's dictionary holds it:
    /// (key, value text), numbers already normalised the way
    /// `VMAF_DICT_NORMALIZE_NUMERICAL_VALUES` does ("1.0" → "1").
    pub options: Vec<(String, String)>,
    pub slope: f64,
    pub intercept: f64,
}

/// `score_transform` (libvmaf's `VmafModel.score_transform`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScoreTransform {
    pub enabled: bool,
    pub p0: Option<f64>,
    pub p1: Option<f64>,
    pub p2: Option<f64>,
    /// `Some` when the model has a `knots` list (possibly empty).
    pub knots: Option<Vec<(f64, f64)>>,
    pub out_lte_in: bool,
    pub out_gte_in: bool,
}

/// A parsed libvmaf JSON model, scoring feature values exactly as libvmaf.
#[derive(Clone, Debug)]
pub struct ModelDefinition {
    pub model_type: ModelType,
    pub norm_type: NormType,
    /// slopes[0] / intercepts[0]: for the prediction.
    pub slope: f64,
    pub intercept: f64,
    pub features: Vec<DefinedFeature>,
    /// `Some((min, max))` when clipping is on (a `score_clip` key and no
    /// disable-clip flag at load).
    pub score_clip: Option<(f64, f64)>,
    /// `chroma_correction_parameter`, when present.
    pub chroma_correction: Option<f64>,
    pub transform: ScoreTransform,
    pub svm: SvmModel,
}

/// Load-time flags, as libvmaf's `VmafModelFlags` act while parsing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadFlags {
    /// `VMAF_MODEL_FLAG_ENABLE_TRANSFORM`: a model with a `score_transform`
    /// gets it switched on.
    pub enable_transform: bool,
    /// `VMAF_MODEL_FLAG_DISABLE_CLIP`: `score_clip` is ignored.
    pub disable_clip: bool,
}

fn invalid(what: impl Into<String>) -> Error {
    Error::Model(what.into())
}

fn number(v: &Json, what: &str) -> Result<f64> {
    v.number().ok_or_else(|| invalid(format!("{what}: expected a number, found {}", v.kind())))
}

fn array<'a>(v: &'a Json, what: &str) -> Result<&'a [Json]> {
    match v {
        Json::Array(items) => Ok(items),
        _ => Err(invalid(format!("{what}: expected an array, found {}", v.kind()))),
    }
}

fn object<'a>(v: &'a Json, what: &str) -> Result<&'a [(String, Json)]> {
    match v {
        Json::Object(members) => Ok(members),
        _ => Err(invalid(format!("{what}: expected an object, found {}", v.kind()))),
    }
}

fn string<'a>(v: &'a Json, what: &str) -> Result<&'a str> {
    v.as_str().ok_or_else(|| invalid(format!("{what}: expected a string, found {}", v.kind())))
}

/// libvmaf's normalisation of a numeric dictionary value
/// (`vmaf_dictionary_set` with `VMAF_DICT_NORMALIZE_NUMERICAL_VALUES`):
/// the text is read with `strtof` and written back with `%g`.
pub(crate) fn normalize_numeric_option(text: &str) -> String {
    // A JSON number is always fully readable by strtof; Rust's f32 parser
    // rounds the text correctly, as glibc's strtof does.
    match text.parse::<f32>() {
        Ok(f) => format_g(f as f64),
        Err(_) => text.to_owned(),
    }
}

impl ModelDefinition {
    /// Parses a libvmaf JSON model (`vmaf_read_json_model_from_buffer`).
    pub fn from_json(text: &str, flags: LoadFlags) -> Result<ModelDefinition> {
        let doc = json::parse(text).map_err(|e| invalid(format!("model is not valid JSON: {e}")))?;
        Self::from_json_value(&doc, flags)
    }

    /// `vmaf_read_json_model` on a parsed document: an object holding a
    /// `model_dict` (a model file, or one member of a model collection).
    pub(crate) fn from_json_value(doc: &Json, flags: LoadFlags) -> Result<ModelDefinition> {
        let top = object(doc, "model file")?;
        let dict = match top.iter().find(|(k, _)| k == "model_dict") {
            Some((_, d)) => d,
            None if top.iter().any(|(k, _)| k == "0") => {
                return Err(Error::NotSupported(
                    "a model collection (bootstrap members \"0\", \"1\", ...) is not one model; \
                     load it with Model, which scores collections"
                        .into(),
                ))
            }
            None => return Err(invalid("model file has no \"model_dict\"")),
        };
        Self::from_model_dict(dict, flags)
    }

    /// `parse_model_dict`: the keys read (each once), the fields libvmaf
    /// requires present, the features put together, the chroma correction
    /// checked.
    fn from_model_dict(dict: &Json, flags: LoadFlags) -> Result<ModelDefinition> {
        let members = object(dict, "model_dict")?;
        check_unique_keys(members)?;
        let fields = DictFields::read(members, flags)?;
        let norm_type = fields.norm_type.ok_or_else(|| {
            invalid("model has no norm_type (libvmaf cannot score it)")
        })?;
        let svm = fields.svm.ok_or_else(|| invalid("model has no libsvm \"model\""))?;
        if fields.names.is_empty() {
            return Err(invalid("model has no feature_names"));
        }
        let features = defined_features(fields.names, &fields.opts, &fields.slopes, &fields.intercepts);
        if let Some(c) = fields.chroma_correction {
            check_chroma_correction(c, &features)?;
        }
        Ok(ModelDefinition {
            model_type: fields.model_type,
            norm_type,
            slope: zero_filled(&fields.slopes, 0),
            intercept: zero_filled(&fields.intercepts, 0),
            features,
            score_clip: fields.score_clip,
            chroma_correction: fields.chroma_correction,
            transform: fields.transform,
            svm,
        })
    }

    /// libvmaf feature names, in the order [`Self::score`] takes values.
    pub fn feature_names(&self) -> impl Iterator<Item = &str> {
        self.features.iter().map(|f| f.name.as_str())
    }

    /// The model's score for one frame, from the feature values in the
    /// order of [`Self::features`]: libvmaf's `vmaf_predict_score_at_index`
    /// with flags 0 (as `vmaf_score_at_index` calls it).
    pub fn score(&self, values: &[f64]) -> Result<f64> {
        let prediction = self.raw_score(values)?;
        Ok(self.clip(self.apply_transform(prediction)))
    }

    /// The prediction before transform and clip: `vmaf_predict_score_at_index`
    /// with `VMAF_MODEL_FLAG_DISABLE_CLIP | VMAF_MODEL_FLAG_DISABLE_TRANSFORM`
    /// (what a bootstrap collection's statistics are computed on).
    pub fn raw_score(&self, values: &[f64]) -> Result<f64> {
        if values.len() != self.features.len() {
            return Err(Error::invalid(format!(
                "model takes {} feature values, got {}",
                self.features.len(),
                values.len()
            )));
        }
        let mut node: Vec<SvmNode> = values
            .iter()
            .zip(&self.features)
            .enumerate()
            .map(|(i, (&v, f))| SvmNode { index: i as i32 + 1, value: self.normalize(f.slope, f.intercept, v) })
            .collect();
        if let Some(c) = self.chroma_correction {
            self.correct_chroma_from_luma(&mut node, c);
        }
        let prediction = self.svm.predict(&node);
        Ok(self.denormalize(self.slope, self.intercept, prediction))
    }

    /// `normalize`.
    fn normalize(&self, slope: f64, intercept: f64, x: f64) -> f64 {
        match self.norm_type {
            NormType::None => x,
            NormType::LinearRescale => slope * x + intercept,
        }
    }

    /// `denormalize` / `denormalize_feature`.
    fn denormalize(&self, slope: f64, intercept: f64, x: f64) -> f64 {
        match self.norm_type {
            NormType::None => x,
            NormType::LinearRescale => (x - intercept) / slope,
        }
    }

    /// `post_process_feature_from_another(model, node, c, 0.0, "adm3",
    /// "speed_chroma")`: where the chroma feature is 0, derive it from adm3.
    fn correct_chroma_from_luma(&self, node: &mut [SvmNode], c: f64) {
        let mut guiding = None;
        let mut guided_idx = None;
        for (i, f) in self.features.iter().enumerate() {
            if f.name.contains("adm3") {
                guiding = Some(self.denormalize(f.slope, f.intercept, node[i].value));
            }
            if f.name.contains("speed_chroma") {
                let guided = self.denormalize(f.slope, f.intercept, node[i].value);
                if guided == 0.0 {
                    guided_idx = Some(i);
                } else {
                    return;
                }
            }
        }
        // Both exist exactly once (checked at load).
        if let (Some(guiding), Some(i)) = (guiding, guided_idx) {
            let corrected = (-c * guiding) + c;
            let f = &self.features[i];
            node[i].value = self.normalize(f.slope, f.intercept, corrected);
        }
    }

    /// `transform` with flags 0.
    pub fn apply_transform(&self, y_in: f64) -> f64 {
        let t = &self.transform;
        if !t.enabled {
            return y_in;
        }
        // Polynomial.
        let y_stage = y_in;
        let mut y_out;
        if t.p0.is_some() || t.p1.is_some() || t.p2.is_some() {
            y_out = 0.0;
            if let Some(p0) = t.p0 {
                y_out += p0;
            }
            if let Some(p1) = t.p1 {
                y_out += p1 * y_stage;
            }
            if let Some(p2) = t.p2 {
                y_out += p2 * y_stage * y_stage;
            }
        } else {
            y_out = y_stage;
        }
        // Piecewise linear.
        if let Some(knots) = &t.knots {
            let y_stage = y_out;
            piecewise_linear_mapping(y_stage, knots, &mut y_out);
        }
        // Rectification.
        if t.out_lte_in {
            y_out = if y_out > y_in { y_in } else { y_out };
        }
        if t.out_gte_in {
            y_out = if y_out < y_in { y_in } else { y_out };
        }
        y_out
    }

    /// `clip` with flags 0.
    pub fn clip(&self, mut prediction: f64) -> f64 {
        if let Some((min, max)) = self.score_clip {
            prediction = if prediction < min { min } else { prediction };
            prediction = if prediction > max { max } else { prediction };
        }
        prediction
    }
}

/// The fields of a `model_dict` as read, before libvmaf's requirements.
struct DictFields {
    model_type: ModelType,
    norm_type: Option<NormType>,
    slopes: Vec<f64>,
    intercepts: Vec<f64>,
    names: Vec<String>,
    opts: Vec<Vec<(String, String)>>,
    score_clip: Option<(f64, f64)>,
    chroma_correction: Option<f64>,
    transform: ScoreTransform,
    svm: Option<SvmModel>,
}

impl DictFields {
    /// Each known key's value parsed, in file order; unknown keys ignored,
    /// as libvmaf ignores them.
    fn read(members: &[(String, Json)], flags: LoadFlags) -> Result<DictFields> {
        let mut f = DictFields {
            model_type: ModelType::Unknown,
            norm_type: None,
            slopes: Vec::new(),
            intercepts: Vec::new(),
            names: Vec::new(),
            opts: Vec::new(),
            score_clip: None,
            chroma_correction: None,
            transform: ScoreTransform::default(),
            svm: None,
        };
        for (key, value) in members {
            match key.as_str() {
                "score_transform" => {
                    f.transform = parse_score_transform(value)?;
                    if !f.transform.enabled && flags.enable_transform {
                        f.transform.enabled = true;
                    }
                }
                "model_type" => f.model_type = parse_model_type(value)?,
                "norm_type" => f.norm_type = Some(parse_norm_type(value)?),
                "score_clip" => {
                    if let Some(clip) = parse_score_clip(value, !flags.disable_clip)? {
                        f.score_clip = Some(clip);
                    }
                }
                "chroma_correction_parameter" => {
                    f.chroma_correction = Some(number(value, "chroma_correction_parameter")?);
                }
                "slopes" => f.slopes = parse_numbers(value, "slopes")?,
                "intercepts" => f.intercepts = parse_numbers(value, "intercepts")?,
                "feature_names" => parse_feature_names(value, &mut f.names)?,
                "feature_opts_dicts" => f.opts = parse_feature_opts_dicts(value)?,
                "model" => f.svm = Some(SvmModel::parse(string(value, "model")?)?),
                _ => {}
            }
        }
        Ok(f)
    }
}

/// A key of `model_dict` given twice is refused (a JSON reader would keep
/// one of them silently).
fn check_unique_keys(members: &[(String, Json)]) -> Result<()> {
    for (i, (k, _)) in members.iter().enumerate() {
        if members[..i].iter().any(|(k2, _)| k2 == k) {
            return Err(invalid(format!("model_dict: key \"{k}\" appears twice")));
        }
    }
    Ok(())
}

fn parse_model_type(value: &Json) -> Result<ModelType> {
    Ok(match string(value, "model_type")? {
        "RESIDUEBOOTSTRAP_LIBSVMNUSVR" => ModelType::ResidueBootstrapSvmNuSvr,
        "BOOTSTRAP_LIBSVMNUSVR" => ModelType::BootstrapSvmNuSvr,
        "LIBSVMNUSVR" => ModelType::SvmNuSvr,
        other => return Err(invalid(format!("unknown model_type \"{other}\""))),
    })
}

fn parse_norm_type(value: &Json) -> Result<NormType> {
    Ok(match string(value, "norm_type")? {
        "linear_rescale" => NormType::LinearRescale,
        "none" => NormType::None,
        other => return Err(invalid(format!("unknown norm_type \"{other}\""))),
    })
}

/// `score_clip` must be an array whatever the flags; its two numbers are
/// read only when clipping is on (`clips`), as libvmaf reads them.
fn parse_score_clip(value: &Json, clips: bool) -> Result<Option<(f64, f64)>> {
    let items = array(value, "score_clip")?;
    if !clips {
        return Ok(None);
    }
    let lo = items.first().ok_or_else(|| invalid("score_clip: empty"))?;
    let hi = items.get(1).ok_or_else(|| invalid("score_clip: one value"))?;
    Ok(Some((number(lo, "score_clip")?, number(hi, "score_clip")?)))
}

/// Feature names, at most `MAX_FEATURE_COUNT`, appended to `names`.
fn parse_feature_names(value: &Json, names: &mut Vec<String>) -> Result<()> {
    for (i, n) in array(value, "feature_names")?.iter().enumerate() {
        if i >= MAX_FEATURE_COUNT {
            return Err(invalid(format!("more than {MAX_FEATURE_COUNT} features")));
        }
        names.push(string(n, "feature_names")?.to_owned());
    }
    Ok(())
}

/// libvmaf zero-fills slopes and intercepts it was not given.
fn zero_filled(v: &[f64], i: usize) -> f64 {
    v.get(i).copied().unwrap_or(0.0)
}

/// Each named feature with its options and its normalisation (slope and
/// intercept `i + 1`: index 0 is the score's own).
fn defined_features(
    names: Vec<String>,
    opts: &[Vec<(String, String)>],
    slopes: &[f64],
    intercepts: &[f64],
) -> Vec<DefinedFeature> {
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| DefinedFeature {
            name,
            options: opts.get(i).cloned().unwrap_or_default(),
            slope: zero_filled(slopes, i + 1),
            intercept: zero_filled(intercepts, i + 1),
        })
        .collect()
}

/// A chroma correction libvmaf can score: a parameter other than 0 (with
/// 0 libvmaf returns success without a score), and exactly one feature
/// named like each of adm3 and speed_chroma (otherwise libvmaf fails or
/// reads uninitialised memory).
fn check_chroma_correction(c: f64, features: &[DefinedFeature]) -> Result<()> {
    if c == 0.0 {
        return Err(Error::NotSupported(
            "chroma_correction_parameter 0 (libvmaf produces no score with it)".into(),
        ));
    }
    for sub in ["adm3", "speed_chroma"] {
        let n = features.iter().filter(|f| f.name.contains(sub)).count();
        if n != 1 {
            return Err(invalid(format!(
                "chroma_correction_parameter needs exactly one feature named *{sub}*, found {n}"
            )));
        }
    }
    Ok(())
}

/// `parse_slopes` / `parse_intercepts`: a non-empty array of numbers.
fn parse_numbers(v: &Json, what: &str) -> Result<Vec<f64>> {
    let items = array(v, what)?;
    if items.is_empty() {
        return Err(invalid(format!("{what}: empty")));
    }
    if items.len() > MAX_FEATURE_COUNT + 1 {
        return Err(invalid(format!("{what}: more than {MAX_FEATURE_COUNT} features")));
    }
    items.iter().map(|x| number(x, what)).collect()
}

/// `parse_feature_opts_dicts`.
fn parse_feature_opts_dicts(v: &Json) -> Result<Vec<Vec<(String, String)>>> {
    let mut out = Vec::new();
    for (i, d) in array(v, "feature_opts_dicts")?.iter().enumerate() {
        if i >= MAX_FEATURE_COUNT {
            return Err(invalid(format!("feature_opts_dicts: more than {MAX_FEATURE_COUNT}")));
        }
        let mut entries: Vec<(String, String)> = Vec::new();
        for (key, val) in object(d, "feature_opts_dicts entry")? {
            let text = match val {
                Json::Number(t) => normalize_numeric_option(t),
                Json::Bool(b) => b.to_string(),
                Json::String(s) => s.clone(),
                other => {
                    return Err(invalid(format!(
                        "feature_opts_dicts: option {key} is {}, expected a number, boolean or string",
                        other.kind()
                    )))
                }
            };
            // VMAF_DICT_DO_NOT_OVERWRITE: a repeated key must repeat the value.
            if let Some((_, existing)) = entries.iter().find(|(k, _)| k == key) {
                if *existing != text {
                    return Err(invalid(format!(
                        "feature_opts_dicts: option {key} given twice ({existing}, {text})"
                    )));
                }
                continue;
            }
            entries.push((key.clone(), text));
        }
        out.push(entries);
    }
    Ok(out)
}

/// `parse_score_transform` (and `parse_knots`).
fn parse_score_transform(v: &Json) -> Result<ScoreTransform> {
    let mut t = ScoreTransform::default();
    for (key, value) in object(v, "score_transform")? {
        match key.as_str() {
            "enabled" => match value {
                Json::Bool(b) => t.enabled = *b,
                other => return Err(invalid(format!("score_transform.enabled is {}", other.kind()))),
            },
            "p0" | "p1" | "p2" => {
                // libvmaf's parser leaves a null unread and then fails on it.
                let p = Some(number(value, &format!("score_transform.{key}"))?);
                match key.as_str() {
                    "p0" => t.p0 = p,
                    "p1" => t.p1 = p,
                    _ => t.p2 = p,
                }
            }
            "knots" => match value {
                Json::Null => return Err(invalid("score_transform.knots: null (libvmaf refuses it)")),
                other => {
                    let mut knots = Vec::new();
                    for (i, pair) in array(other, "score_transform.knots")?.iter().enumerate() {
                        if i >= MAX_KNOT_COUNT {
                            return Err(invalid(format!("score_transform.knots: more than {MAX_KNOT_COUNT}")));
                        }
                        let xy = array(pair, "score_transform.knots entry")?;
                        if xy.len() > 2 {
                            return Err(invalid("score_transform.knots: an entry has more than 2 numbers"));
                        }
                        // libvmaf zero-fills missing coordinates.
                        let x = xy.first().map(|n| number(n, "knot")).transpose()?.unwrap_or(0.0);
                        let y = xy.get(1).map(|n| number(n, "knot")).transpose()?.unwrap_or(0.0);
                        knots.push((x, y));
                    }
                    t.knots = Some(knots);
                }
            },
            "out_lte_in" => t.out_lte_in |= string(value, "score_transform.out_lte_in")? == "true",
            "out_gte_in" => t.out_gte_in |= string(value, "score_transform.out_gte_in")? == "true",
            _ => {}
        }
    }
    Ok(t)
}

/// `find_linear_function_parameters`; `None` where libvmaf returns an
/// error (and leaves alpha and beta untouched).
fn find_linear_function_parameters(p1: (f64, f64), p2: (f64, f64)) -> Option<(f64, f64)> {
    if !(p1.0 <= p2.0 && p1.1 <= p2.1) {
        return None;
    }
    if p2.0 - p1.0 == 0.0 || p2.1 - p1.1 == 0.0 {
        if !(p1.0 == p2.0 && p1.1 == p2.1) {
            return None;
        }
        Some((1.0, 0.0))
    } else if p1.0 == 0.0 {
        let beta = p1.1;
        let alpha = (p2.1 - beta) / p2.0;
        Some((alpha, beta))
    } else {
        let alpha = (p2.1 - p1.1) / (p2.0 - p1.0);
        let beta = p1.1 - (p1.0 * alpha);
        Some((alpha, beta))
    }
}

/// `piecewise_linear_mapping`, writing `y` as libvmaf does (including what
/// it leaves behind when it gives up on knots that are not increasing: its
/// error is ignored by the caller).
fn piecewise_linear_mapping(x: f64, knots: &[(f64, f64)], y: &mut f64) {
    let (mut slope, mut offset) = (0.0, 0.0);
    if knots.len() <= 1 {
        return;
    }
    let n_seg = knots.len() - 1;
    *y = 0.0;
    for idx in 0..n_seg {
        let (k0, k1) = (knots[idx], knots[idx + 1]);
        if !(k0.0 < k1.0 && k0.1 <= k1.1) {
            return;
        }
        let cond0 = k0.0 <= x;
        let cond1 = x <= k1.0;
        if k0.1 == k1.1 {
            if cond0 && cond1 {
                *y = k0.1;
            }
            if idx == 0 && x < k0.0 {
                *y = k0.1;
            }
            if idx == n_seg - 1 && x > k1.0 {
                *y = k0.1;
            }
        } else {
            if let Some((a, b)) = find_linear_function_parameters(k0, k1) {
                slope = a;
                offset = b;
            }
            if cond0 && cond1 {
                *y = slope * x + offset;
            }
            if idx == 0 && x < k0.0 {
                *y = slope * x + offset;
            }
            if idx == n_seg - 1 && x > k1.0 {
                *y = slope * x + offset;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_options_normalise_like_libvmaf() {
        assert_eq!(normalize_numeric_option("1.0"), "1");
        assert_eq!(normalize_numeric_option("100.0"), "100");
        assert_eq!(normalize_numeric_option("0.06"), "0.06");
        assert_eq!(normalize_numeric_option("1080"), "1080");
        // strtof: float precision before %g.
        assert_eq!(normalize_numeric_option("0.1234567"), "0.123457");
    }

    #[test]
    fn piecewise_linear() {
        let knots = [(0.0, 0.0), (50.0, 60.0), (100.0, 100.0)];
        let mut y = f64::NAN;
        piecewise_linear_mapping(25.0, &knots, &mut y);
        assert_eq!(y, 30.0);
        piecewise_linear_mapping(150.0, &knots, &mut y);
        assert_eq!(y, 0.8 * 150.0 + 20.0);
        // Not increasing: libvmaf leaves y at 0 from the reset.
        piecewise_linear_mapping(10.0, &[(0.0, 0.0), (0.0, 1.0)], &mut y);
        assert_eq!(y, 0.0);
    }
}
