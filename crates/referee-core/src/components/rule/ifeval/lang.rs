//! Language identification for `language:response_language` and the `change_case:english_*`
//! checks. The reference uses `langdetect` (a port of Google's language-detection, 55
//! languages, randomised: short texts can get different answers from run to run); Referee uses
//! `whatlang` (trigram profiles, deterministic), restricted to the 51 languages both know (the
//! reference can answer nothing else; fewer candidates is also faster) and mapped to the ISO
//! 639-1 codes IFEval's `language` kwarg uses. Both agree on ordinary paragraphs; on very short
//! or mixed-language texts they may not (about 2–4 % of the bench's language checks). A
//! `language` kwarg that names a language `whatlang` does not know (Albanian `sq`, Somali `so`,
//! Swahili `sw`) is a `bad_instruction_kwargs` error; Chinese is `zh` (`zh-cn` and `zh-tw` are
//! accepted as the same language).

use std::sync::LazyLock;
use whatlang::{Detector, Lang};

/// ISO 639-3 (whatlang) → ISO 639-1 (IFEval), for the languages `langdetect` knows too.
const CODES: &[(&str, &str)] = &[
    ("afr", "af"),
    ("ara", "ar"),
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
    ("est", "et"),
    ("fin", "fi"),
    ("fra", "fr"),
    ("guj", "gu"),
    ("heb", "he"),
    ("hin", "hi"),
    ("hrv", "hr"),
    ("hun", "hu"),
    ("ind", "id"),
    ("ita", "it"),
    ("jpn", "ja"),
    ("kan", "kn"),
    ("kor", "ko"),
    ("lav", "lv"),
    ("lit", "lt"),
    ("mal", "ml"),
    ("mar", "mr"),
    ("mkd", "mk"),
    ("nep", "ne"),
    ("nld", "nl"),
    ("nob", "no"),
    ("pan", "pa"),
    ("pes", "fa"),
    ("pol", "pl"),
    ("por", "pt"),
    ("ron", "ro"),
    ("rus", "ru"),
    ("slk", "sk"),
    ("slv", "sl"),
    ("spa", "es"),
    ("swe", "sv"),
    ("tam", "ta"),
    ("tel", "te"),
    ("tgl", "tl"),
    ("tha", "th"),
    ("tur", "tr"),
    ("ukr", "uk"),
    ("urd", "ur"),
    ("vie", "vi"),
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
    DETECTOR.detect_lang(text).map(iso639_1)
}

static DETECTOR: LazyLock<Detector> = LazyLock::new(|| {
    Detector::with_allowlist(
        CODES
            .iter()
            .filter_map(|(three, _)| Lang::from_code(*three))
            .collect(),
    )
});

/// Whether [`detect`] could answer `code` for `text`, judged from the text's script alone
/// (cheap: a count of characters per script, no trigram scoring). `false` is exact: whatlang
/// picks the script first and the language among that script's languages (Han text may be
/// Chinese or Japanese). `true` says nothing.
pub fn may_be(text: &str, code: &str) -> bool {
    use whatlang::Script;
    match whatlang::detect_script(text) {
        None => false,
        Some(Script::Mandarin) => matches!(code, "zh" | "ja"),
        Some(s) => s.langs().iter().any(|l| iso639_1(*l) == code),
    }
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
        assert!(!may_be("An English sentence.", "ja") && may_be("An English sentence.", "fr"));
        assert!(may_be("日本語の文章です。", "ja") && may_be("中文句子。", "zh"));
        assert!(!may_be("Это предложение.", "en") && may_be("Это предложение.", "uk"));
        assert!(known("en") && known("zh-CN") && known("fa") && !known("xx") && !known("eo"));
        assert_eq!(CODES.len(), 51);
        assert!(CODES.iter().all(|(c, _)| Lang::from_code(*c).is_some()));
    }
}
