"""Adversarial rows for the ifeval agreement check: short texts made of markdown symbols,
contractions, look-alikes, mixed scripts and titlecase letters, one instruction each (every
type but the three language ones), kwargs drawn at random. Run them through compare.py; with
`--no-zero` no kwarg is 0 (lm-eval drops falsy kwargs and draws random ones, which Referee
does not, so rows with a 0 kwarg are expected to differ).

    python fuzz_rows.py SEED N [--no-zero] > fuzz.jsonl
"""
import json, os, random, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_rows import IDS
rng = random.Random(int(sys.argv[1]))
toks = ["the", "The", "THE", "CAT", "DON'T", "I'M", "NASA's", "A&B", "U.S.A.", "HELLO,WORLD", "10:30", "AM", "e.g.", "Mr.", "3.5", "...", "?", "!",
        ",", "，", ";", ":", "--", "(", ")", '"', "'", "“", "”", "\n", "\n\n", "***", "******", "* item", "- item", "*bold*", "**strong**", "[name]", "[]",
        "<<Title>>", "<<  >>", "P.S.", "p. s.", "P.P.S", "Section 1", "SECTION 2", "{\"a\": 1}", "```json", "```", "naïve", "café", "Straße", "ÜBER",
        "hindi", "समिति", "日本語", "ß", "İstanbul", "ǅ", "x_y", "state-of-the-art", "can't", "won't", "Any other questions?", "My answer is yes.",
        "tea", "Tea", "TEA", "teapot", "red", "Red", "r\u200bed", "zzz", "Quiz", "WORD-WORD", "ABC123", "123"]
def kw(iid):
    r = lambda: rng.choice(["less than", "at least"])
    return {
        "keywords:existence": {"keywords": rng.sample(["tea", "red", "cat", "section", "p.s"], 2)},
        "keywords:frequency": {"keyword": rng.choice(["tea", "the", "red", "cat"]), "frequency": rng.randint(0, 4), "relation": r()},
        "keywords:forbidden_words": {"forbidden_words": rng.sample(["tea", "red", "the", "cat", "word"], 2)},
        "keywords:letter_frequency": {"letter": rng.choice("aetzi"), "let_frequency": rng.randint(0, 8), "let_relation": r()},
        "length_constraints:number_sentences": {"num_sentences": rng.randint(0, 6), "relation": r()},
        "length_constraints:number_paragraphs": {"num_paragraphs": rng.randint(1, 4)},
        "length_constraints:number_words": {"num_words": rng.randint(0, 25), "relation": r()},
        "length_constraints:nth_paragraph_first_word": (lambda n: {"num_paragraphs": n, "nth_paragraph": rng.randint(1, n), "first_word": rng.choice(["the", "cat", "hello", "tea"])})(rng.randint(1, 3)),
        "detectable_content:number_placeholders": {"num_placeholders": rng.randint(1, 3)},
        "detectable_content:postscript": {"postscript_marker": rng.choice(["P.S.", "P.P.S", "PS:"])},
        "detectable_format:number_bullet_lists": {"num_bullets": rng.randint(0, 3)},
        "detectable_format:number_highlighted_sections": {"num_highlights": rng.randint(1, 3)},
        "detectable_format:multiple_sections": {"section_spliter": rng.choice(["Section", "SECTION"]), "num_sections": rng.randint(1, 2)},
        "combination:repeat_prompt": {"prompt_to_repeat": rng.choice(["the cat", "THE CAT", "tea"])},
        "startend:end_checker": {"end_phrase": rng.choice(["Any other questions?", "tea", "cat"])},
        "change_case:capital_word_frequency": {"capital_frequency": rng.randint(0, 6), "capital_relation": r()},
    }.get(iid, {})
skip = {"language:response_language", "change_case:english_capital", "change_case:english_lowercase"}
ids = [i for i in IDS if i not in skip]
for i in range(int(sys.argv[2])):
    t = "".join(rng.choice(toks) + rng.choice([" ", " ", "", "\n"]) for _ in range(rng.randint(1, 30)))
    iid = ids[i % len(ids)]
    k = kw(iid)
    if "--no-zero" in sys.argv:
        k = {a: (1 if v == 0 else v) for a, v in k.items()}
    print(json.dumps({"id": f"f{i}", "item": {"instruction_id_list": [iid], "kwargs": [k]}, "sample": {"output_text": t}}, ensure_ascii=False))
