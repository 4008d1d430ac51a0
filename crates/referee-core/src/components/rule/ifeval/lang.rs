//! Language identification for `language:response_language` and the `change_case:english_*`
//! checks. The reference uses `langdetect` (a port of Google's language-detection, 55
//! languages, randomised: short texts can get different answers from run to run); Referee uses
//! `whatlang` (trigram profiles, 70 languages, deterministic), mapped to the ISO 639-1 codes
//! IFEval's `language` kwarg uses. Both agree on ordinary paragraphs; on very short or mixed
//! texts they may not. Languages `langdetect` knows and `whatlang` does not (Albanian `sq`,
//! Somali `so`, Swahili `sw`) are never detected, so a `language` kwarg naming them always
//! fails; Chinese is `zh` (`zh-cn` and `zh-tw` are accepted as the same language).

use whatlang::Lang;

/// ISO 639-3 (whatlang) → ISO 639-1 (IFEval).
const CODES: &[(&str, &str)] = &[
    ("afr", "af"),
    ("aka", "ak"),
    ("amh", "am"),
    ("ara", "ar"),
    ("aze", "az"),
    ("bel", "be"),
    ("ben", "bn"),
    ("bul", "bg"),
    ("cat", "ca"),
    ("ces", "cs"),
    ("cmn", "zh"),
    ("cym", "cy"),
    ("dan", "da"),
    ("deu", "de"),
    ("ell", "el"),
    ("eng", "en"),
    ("epo", "eo"),
    ("est", "et"),
    ("fin", "fi"),
    ("fra", "fr"),
    ("guj", "gu"),
    ("heb", "he"),
    ("hin", "hi"),
    ("hrv", "hr"),
    ("hun", "hu"),
    ("hye", "hy"),
    ("ind", "id"),
    ("ita", "it"),
    ("jav", "jv"),
    ("jpn", "ja"),
    ("kan", "kn"),
    ("kat", "ka"),
    ("khm", "km"),
    ("kor", "ko"),
    ("lat", "la"),
    ("lav", "lv"),
    ("lit", "lt"),
    ("mal", "ml"),
    ("mar", "mr"),
    ("mkd", "mk"),
    ("mya", "my"),
    ("nep", "ne"),
    ("nld", "nl"),
    ("nob", "no"),
    ("ori", "or"),
    ("pan", "pa"),
    ("pes", "fa"),
    ("pol", "pl"),
    ("por", "pt"),
    ("ron", "ro"),
    ("rus", "ru"),
    ("sin", "si"),
    ("slk", "sk"),
    ("slv", "sl"),
    ("sna", "sn"),
    ("spa", "es"),
    ("srp", "sr"),
    ("swe", "sv"),
    ("tam", "ta"),
    ("tel", "te"),
    ("tgl", "tl"),
    ("tha", "th"),
    ("tuk", "tk"),
    ("tur", "tr"),
    ("ukr", "uk"),
    ("urd", "ur"),
    ("uzb", "uz"),
    ("vie", "vi"),
    ("yid", "yi"),
    ("zul", "zu"),
];

/// The ISO 639-1 code of a whatlang language.
pub fn iso639_1(l: Lang) -> &'static str {
    let c = l.code();
    CODES
        .iter()
        .find(|(three, _)| *three == c)
        .map_or(c, |(_, two)| two)
}

/// The detected language of `text` (ISO 639-1), or `None` when nothing can be detected (no
/// letters).
pub fn detect(text: &str) -> Option<&'static str> {
    whatlang::detect_lang(text).map(iso639_1)
}

/// Whether a `language` kwarg names a language Referee can recognise.
pub fn known(code: &str) -> bool {
    let c = normalise(code);
    CODES.iter().any(|(_, two)| *two == c)
}

/// `zh-CN` → `zh`; other codes lower-cased.
pub fn normalise(code: &str) -> String {
    let c = code.trim().to_lowercase();
    match c.as_str() {
        "zh-cn" | "zh-tw" => "zh".into(),
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects() {
        assert_eq!(
            detect("This is a plain English paragraph about the weather and the sea."),
            Some("en")
        );
        assert_eq!(
            detect("Ceci est un paragraphe en français qui parle du temps qu'il fait."),
            Some("fr")
        );
        assert_eq!(
            detect("Это предложение написано на русском языке."),
            Some("ru")
        );
        assert_eq!(detect("1234 5678"), None);
        assert!(known("en") && known("zh-CN") && known("fa") && !known("xx"));
    }
}
