//! Porter stemmer, a port of `nltk.stem.porter.PorterStemmer()` in its default
//! `NLTK_EXTENSIONS` mode (nltk 3.10.4). It keeps nltk's irregular-form table,
//! the `ies`/`ied` special cases for four-letter words, the two-letter `cvc`
//! rule, the `alli`, `fulli` and `logi` step-2 rules, and nltk's
//! `y -> i` condition in step 1c. It works on Unicode scalar values as
//! Python does. Only ASCII `aeiou` count as vowels, so non-ASCII letters are
//! consonants.
//!
//! METEOR's stem-matching stage is the only caller.

use super::tokenize::lowercase;

type Word = Vec<char>;
/// A rule condition, called as `condition(stem, word)` where `stem` is `word`
/// without the matched suffix.
type Cond = fn(&[char], &[char]) -> bool;

const IRREGULAR: &[(&str, &str)] = &[
    ("sky", "sky"),
    ("skies", "sky"),
    ("dying", "die"),
    ("lying", "lie"),
    ("tying", "tie"),
    ("news", "news"),
    ("innings", "inning"),
    ("inning", "inning"),
    ("outings", "outing"),
    ("outing", "outing"),
    ("cannings", "canning"),
    ("canning", "canning"),
    ("howe", "howe"),
    ("proceed", "proceed"),
    ("exceed", "exceed"),
    ("succeed", "succeed"),
];

/// `PorterStemmer().stem(word)`: lowercases, then stems.
pub(crate) fn stem(word: &str) -> String {
    let lower = lowercase(word);
    if let Some(&(_, base)) = IRREGULAR.iter().find(|(form, _)| *form == lower) {
        return base.to_owned();
    }
    // nltk measures the length of the word as given, not the lowercased one.
    if word.chars().count() <= 2 {
        return lower.into_owned();
    }
    let mut w: Word = lower.chars().collect();
    step1a(&mut w);
    step1b(&mut w);
    step1c(&mut w);
    step2(&mut w);
    step3(&mut w);
    step4(&mut w);
    step5a(&mut w);
    step5b(&mut w);
    w.into_iter().collect()
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

/// Consonant flag of every position: `y` is a consonant at the start or
/// after a vowel, a vowel after a consonant.
fn consonant_flags(w: &[char]) -> impl Iterator<Item = bool> + '_ {
    let mut prev: Option<bool> = None;
    w.iter().map(move |&c| {
        let cons = if is_vowel(c) {
            false
        } else if c == 'y' {
            prev.is_none_or(|p| !p)
        } else {
            true
        };
        prev = Some(cons);
        cons
    })
}

fn is_consonant(w: &[char], i: usize) -> bool {
    consonant_flags(&w[..=i]).last().unwrap_or(true)
}

/// Porter's m: the number of vowel-to-consonant transitions.
fn measure(w: &[char]) -> usize {
    let mut m = 0;
    let mut prev_vowel = false;
    for cons in consonant_flags(w) {
        if cons && prev_vowel {
            m += 1;
        }
        prev_vowel = !cons;
    }
    m
}

fn contains_vowel(w: &[char]) -> bool {
    consonant_flags(w).any(|c| !c)
}

fn ends_double_consonant(w: &[char]) -> bool {
    let n = w.len();
    n >= 2 && w[n - 1] == w[n - 2] && is_consonant(w, n - 1)
}

fn ends_cvc(w: &[char]) -> bool {
    let n = w.len();
    (n >= 3
        && is_consonant(w, n - 3)
        && !is_consonant(w, n - 2)
        && is_consonant(w, n - 1)
        && !matches!(w[n - 1], 'w' | 'x' | 'y'))
        || (n == 2 && !is_consonant(w, 0) && is_consonant(w, 1))
}

/// Whether `w` ends with `suffix`. Every suffix used here is ASCII, so its
/// byte length is its length in characters.
fn ends_with(w: &[char], suffix: &str) -> bool {
    let k = suffix.len();
    w.len() >= k
        && w[w.len() - k..]
            .iter()
            .zip(suffix.bytes())
            .all(|(&c, b)| c == char::from(b))
}

/// Replaces the last `cut` characters of `w` with `replacement`.
fn replace_tail(w: &mut Word, cut: usize, replacement: &str) {
    w.truncate(w.len() - cut);
    w.extend(replacement.chars());
}

/// nltk's `_apply_rule_list` without the `*d` rule: the first rule whose
/// suffix matches decides, whether or not its condition holds.
fn apply_rules(w: &mut Word, rules: &[(&str, &str, Cond)]) {
    for &(suffix, replacement, cond) in rules {
        if ends_with(w, suffix) {
            let cut = suffix.len();
            if cond(&w[..w.len() - cut], w) {
                replace_tail(w, cut, replacement);
            }
            return;
        }
    }
}

fn always(_: &[char], _: &[char]) -> bool {
    true
}

fn m_gt0(stem: &[char], _: &[char]) -> bool {
    measure(stem) > 0
}

fn m_gt1(stem: &[char], _: &[char]) -> bool {
    measure(stem) > 1
}

fn step1a(w: &mut Word) {
    if ends_with(w, "ies") && w.len() == 4 {
        replace_tail(w, 3, "ie");
        return;
    }
    apply_rules(
        w,
        &[
            ("sses", "ss", always),
            ("ies", "i", always),
            ("ss", "ss", always),
            ("s", "", always),
        ],
    );
}

fn step1b(w: &mut Word) {
    if ends_with(w, "ied") {
        let replacement = if w.len() == 4 { "ie" } else { "i" };
        replace_tail(w, 3, replacement);
        return;
    }
    if ends_with(w, "eed") {
        if measure(&w[..w.len() - 3]) > 0 {
            replace_tail(w, 3, "ee");
        }
        return;
    }
    let Some(cut) = ["ed", "ing"]
        .into_iter()
        .find(|s| ends_with(w, s) && contains_vowel(&w[..w.len() - s.len()]))
        .map(str::len)
    else {
        return;
    };
    w.truncate(w.len() - cut);
    // Rules applied to the intermediate stem, in nltk's order.
    for (suffix, replacement) in [("at", "ate"), ("bl", "ble"), ("iz", "ize")] {
        if ends_with(w, suffix) {
            replace_tail(w, 2, replacement);
            return;
        }
    }
    let last = w[w.len() - 1];
    if ends_double_consonant(w) || ends_with(w, "*d") {
        // `*d`: drop one of the doubled letters unless it is l, s or z.
        if !matches!(last, 'l' | 's' | 'z') {
            w.truncate(w.len() - 2);
            w.push(last);
        }
        return;
    }
    if measure(w) == 1 && ends_cvc(w) {
        w.push('e');
    }
}

fn step1c(w: &mut Word) {
    if ends_with(w, "y") {
        let stem = &w[..w.len() - 1];
        if stem.len() > 1 && is_consonant(stem, stem.len() - 1) {
            replace_tail(w, 1, "i");
        }
    }
}

fn step2(w: &mut Word) {
    while ends_with(w, "alli") && measure(&w[..w.len() - 4]) > 0 {
        replace_tail(w, 4, "al");
    }
    apply_rules(
        w,
        &[
            ("ational", "ate", m_gt0),
            ("tional", "tion", m_gt0),
            ("enci", "ence", m_gt0),
            ("anci", "ance", m_gt0),
            ("izer", "ize", m_gt0),
            ("bli", "ble", m_gt0),
            ("alli", "al", m_gt0),
            ("entli", "ent", m_gt0),
            ("eli", "e", m_gt0),
            ("ousli", "ous", m_gt0),
            ("ization", "ize", m_gt0),
            ("ation", "ate", m_gt0),
            ("ator", "ate", m_gt0),
            ("alism", "al", m_gt0),
            ("iveness", "ive", m_gt0),
            ("fulness", "ful", m_gt0),
            ("ousness", "ous", m_gt0),
            ("aliti", "al", m_gt0),
            ("iviti", "ive", m_gt0),
            ("biliti", "ble", m_gt0),
            ("fulli", "ful", m_gt0),
            // nltk tests the word minus "ogi", not the stem minus "logi".
            ("logi", "log", |_, word| {
                measure(&word[..word.len() - 3]) > 0
            }),
        ],
    );
}

fn step3(w: &mut Word) {
    apply_rules(
        w,
        &[
            ("icate", "ic", m_gt0),
            ("ative", "", m_gt0),
            ("alize", "al", m_gt0),
            ("iciti", "ic", m_gt0),
            ("ical", "ic", m_gt0),
            ("ful", "", m_gt0),
            ("ness", "", m_gt0),
        ],
    );
}

fn step4(w: &mut Word) {
    apply_rules(
        w,
        &[
            ("al", "", m_gt1),
            ("ance", "", m_gt1),
            ("ence", "", m_gt1),
            ("er", "", m_gt1),
            ("ic", "", m_gt1),
            ("able", "", m_gt1),
            ("ible", "", m_gt1),
            ("ant", "", m_gt1),
            ("ement", "", m_gt1),
            ("ment", "", m_gt1),
            ("ent", "", m_gt1),
            ("ion", "", |stem, _| {
                measure(stem) > 1 && matches!(stem.last(), Some('s' | 't'))
            }),
            ("ou", "", m_gt1),
            ("ism", "", m_gt1),
            ("ate", "", m_gt1),
            ("iti", "", m_gt1),
            ("ous", "", m_gt1),
            ("ive", "", m_gt1),
            ("ize", "", m_gt1),
        ],
    );
}

fn step5a(w: &mut Word) {
    if ends_with(w, "e") {
        let stem = &w[..w.len() - 1];
        let m = measure(stem);
        if m > 1 || (m == 1 && !ends_cvc(stem)) {
            w.pop();
        }
    }
}

fn step5b(w: &mut Word) {
    apply_rules(
        w,
        &[("ll", "l", |_, word| measure(&word[..word.len() - 1]) > 1)],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_nltk_porter() {
        // [PorterStemmer().stem(w) for w in words], nltk 3.10.4 (NLTK_EXTENSIONS mode)
        let cases: &[(&str, &str)] = &[
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "tie"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("skies", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("valenci", "valenc"),
            ("hesitanci", "hesit"),
            ("digitizer", "digit"),
            ("conformabli", "conform"),
            ("radicalli", "radic"),
            ("differentli", "differ"),
            ("vileli", "vile"),
            ("analogousli", "analog"),
            ("vietnamization", "vietnam"),
            ("predication", "predic"),
            ("operator", "oper"),
            ("feudalism", "feudal"),
            ("decisiveness", "decis"),
            ("hopefulness", "hope"),
            ("callousness", "callous"),
            ("formaliti", "formal"),
            ("sensitiviti", "sensit"),
            ("sensibiliti", "sensibl"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("formalize", "formal"),
            ("electriciti", "electr"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("inference", "infer"),
            ("airliner", "airlin"),
            ("gyroscopic", "gyroscop"),
            ("adjustable", "adjust"),
            ("defensible", "defens"),
            ("irritant", "irrit"),
            ("replacement", "replac"),
            ("adjustment", "adjust"),
            ("dependent", "depend"),
            ("adoption", "adopt"),
            ("homologou", "homolog"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("angulariti", "angular"),
            ("homologous", "homolog"),
            ("effective", "effect"),
            ("bowdlerize", "bowdler"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
            ("dying", "die"),
            ("lying", "lie"),
            ("news", "news"),
            ("generously", "gener"),
            ("fluently", "fluentli"),
            ("analogi", "analog"),
            ("sly", "sli"),
            ("crying", "cri"),
            ("ay", "ay"),
            ("died", "die"),
            ("tied", "tie"),
            ("naïveté", "naïveté"),
            ("Running", "run"),
            ("İstanbul", "i\u{307}stanbul"),
        ];
        for &(word, want) in cases {
            assert_eq!(stem(word), want, "stem({word:?})");
        }
    }
}
