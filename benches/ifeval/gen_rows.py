"""Seeded generator of realistic IFEval rows for the ifeval bench.

Each row is {"id", "item": {"prompt", "instruction_id_list", "kwargs"}, "sample": {"output_text"}}
in Referee's row shape, with the item in the IFEval / Hugging Face format (every kwarg a
checker does not use is absent; pass --hf-nulls to store them as null as the HF dataset
does). Responses are assembled from prose in several languages, with or without titles,
bullets, highlights, sections, `***` paragraphs, postscripts, JSON, quotes, capitals,
lower case, commas, abbreviations and numbers that test sentence splitting; the instructions
are drawn so that all 25 types appear and each passes and fails on a fair share of rows.

    python gen_rows.py --seed 0 --n 2000 > rows.jsonl
"""

import argparse
import json
import random

EN = [
    "The committee met on Tuesday to review the annual budget.",
    "Mr. Smith argued that the U.S. market would recover by 3.5 percent next year.",
    "Dr. Lee disagreed, citing weak demand in the retail sector.",
    "In the end, they agreed to revisit the plan in March.",
    "Solar panels convert sunlight into electricity with no moving parts.",
    "Most home systems pay for themselves within eight to ten years.",
    "Is it worth the upfront cost? For many families, yes!",
    "Batteries, inverters, and permits add to the total price.",
    "The river flooded the valley after three days of rain.",
    "Farmers moved their cattle to higher ground, e.g. the hills near the old mill.",
    "Volunteers filled sandbags late into the night...",
    "By Friday the water had receded and the roads reopened.",
    "She said \"we will rebuild.\" Then she went back to work.",
    "A good recipe starts with fresh ingredients and patience.",
    "Chop the onions, brown the garlic, and add the tomatoes.",
    "Simmer for 20 min. before adding the basil.",
    "The results were published in Nature in Jan. 2021.",
    "Our team, led by Prof. Garcia, ran 1,200 trials over six months.",
    "Why does the sky look blue? Because air scatters short wavelengths more.",
    "The museum opens at 9 a.m. and closes at 5 p.m. on weekdays.",
]
OTHER = {
    "es": "El comité se reunió el martes para revisar el presupuesto anual. Los miembros discutieron los gastos de la ciudad y decidieron aplazar la votación hasta el próximo mes, cuando tengan más información sobre los ingresos.",
    "fr": "Le comité s'est réuni mardi pour examiner le budget annuel. Les membres ont discuté des dépenses de la ville et ont décidé de reporter le vote au mois prochain, lorsqu'ils auront plus d'informations sur les recettes.",
    "de": "Der Ausschuss hat sich am Dienstag getroffen, um den Jahreshaushalt zu prüfen. Die Mitglieder haben über die Ausgaben der Stadt gesprochen und beschlossen, die Abstimmung auf den nächsten Monat zu verschieben.",
    "it": "Il comitato si è riunito martedì per esaminare il bilancio annuale. I membri hanno discusso delle spese della città e hanno deciso di rinviare il voto al mese prossimo, quando avranno più informazioni sulle entrate.",
    "pt": "O comitê se reuniu na terça-feira para revisar o orçamento anual. Os membros discutiram as despesas da cidade e decidiram adiar a votação para o próximo mês, quando tiverem mais informações sobre as receitas.",
    "ru": "Комитет собрался во вторник, чтобы рассмотреть годовой бюджет. Члены комитета обсудили расходы города и решили отложить голосование до следующего месяца, когда у них будет больше информации о доходах.",
    "hi": "समिति ने वार्षिक बजट की समीक्षा के लिए मंगलवार को बैठक की। सदस्यों ने शहर के खर्चों पर चर्चा की और अगले महीने तक मतदान स्थगित करने का निर्णय लिया।",
    "ja": "委員会は火曜日に年間予算を検討するために会合を開きました。委員たちは市の支出について話し合い、収入に関する情報がそろう来月まで採決を延期することを決めました。",
    "ko": "위원회는 연간 예산을 검토하기 위해 화요일에 회의를 열었습니다. 위원들은 시의 지출에 대해 논의하고 수입에 대한 정보가 더 많아지는 다음 달까지 투표를 연기하기로 결정했습니다.",
    "ar": "اجتمعت اللجنة يوم الثلاثاء لمراجعة الميزانية السنوية. وناقش الأعضاء نفقات المدينة وقرروا تأجيل التصويت إلى الشهر المقبل عندما تتوفر لديهم معلومات أكثر عن الإيرادات.",
}
KEYWORDS = ["budget", "river", "solar", "recipe", "market", "team", "water", "energy", "plan", "museum"]
END_PHRASES = ["Any other questions?", "Is there anything else I can help with?", "Let me know if you have additional questions."]
PROMPTS = [
    "Write a short report about the committee meeting.",
    "Explain how home solar panels work.",
    "Describe what happened during the flood.",
]


def prose(rng, k):
    return " ".join(rng.choice(EN) for _ in range(k))


def response(rng):
    """A response with random features, and the features it has."""
    f = {}
    lang = rng.choice(["en"] * 7 + list(OTHER))
    parts = []
    if lang != "en":
        body = [OTHER[lang]]
        if rng.random() < 0.5:
            body.append(OTHER[lang])
    else:
        body = [prose(rng, rng.randint(1, 5)) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.3:
        parts.append(f"<<{rng.choice(['Budget Review', 'On Solar Power', 'After the Flood', '  '])}>>")
    style = rng.random()
    if style < 0.15:
        sec = rng.choice(["Section", "SECTION", "Part"])
        body = [f"{sec} {i + 1}\n{b}" for i, b in enumerate(body)]
    elif style < 0.3:
        body = ["\n***\n".join(body)] if rng.random() < 0.8 else ["\n***\n***\n".join(body)]
    elif style < 0.45:
        mark = rng.choice(["* ", "- ", "*", "• ", "1. "])
        items = [rng.choice(EN) for _ in range(rng.randint(1, 6))]
        body.append("\n".join(mark + it for it in items))
    elif style < 0.55:
        obj = {"summary": rng.choice(EN), "score": rng.randint(1, 10)}
        j = json.dumps(obj, indent=rng.choice([None, 2]))
        body = [rng.choice([j, f"```json\n{j}\n```", f"```\n{j}\n```", f"Here is the JSON: {j}", f"```json\n{j}\n```\nHope this helps!"])]
    parts.append("\n\n".join(body))
    if rng.random() < 0.3:
        hl = rng.choice(["*key point*", "**important note**", "*a* and *b*", "** **"])
        parts.append(f"Remember the {hl} here.")
    if rng.random() < 0.25:
        parts.append(rng.choice(["P.S. Thanks for reading.", "P.P.S. One more thing.", "p.s. see you soon.", "PS: bye."]))
    if rng.random() < 0.2:
        parts.append(rng.choice(END_PHRASES))
    if rng.random() < 0.1:
        parts.append("[name] will contact you at [address] about the [item].")
    text = "\n\n".join(parts)
    r = rng.random()
    if r < 0.1:
        text = text.upper()
    elif r < 0.2:
        text = text.lower()
    elif r < 0.25:
        text = text.replace(",", "")
    if rng.random() < 0.08:
        text = f'"{text}"'
    if rng.random() < 0.08:
        text = "Sure, here is my answer:\n" + text
    if rng.random() < 0.05:
        text = text + "\n******\n" + prose(rng, 2)
    return text, lang


def pool(rng, text):
    """Keywords: half the time words of the response, else topic words."""
    words = [w.strip(".,!?\"*<>()").lower() for w in text.split()]
    words = [w for w in words if len(w) > 3 and w.isalpha()]
    return list(dict.fromkeys(words))[:20] if words and rng.random() < 0.5 and len(set(words)) >= 2 else KEYWORDS


def rel(rng):
    return rng.choice(["less than", "at least"])


def instruction(rng, iid, text, lang, prompt):
    words = len(text.split())
    if iid == "keywords:existence":
        return {"keywords": rng.sample(pool(rng, text), rng.randint(1, 2))}
    if iid == "keywords:frequency":
        return {"keyword": rng.choice(pool(rng, text)), "frequency": rng.randint(1, 3), "relation": rel(rng)}
    if iid == "keywords:forbidden_words":
        return {"forbidden_words": rng.sample(pool(rng, text) + ["the", "and"], 2)}
    if iid == "keywords:letter_frequency":
        letter = rng.choice("aeiouzqxk")
        n = text.lower().count(letter)
        return {"letter": letter, "let_frequency": max(1, n + rng.randint(-3, 3)), "let_relation": rel(rng)}
    if iid == "language:response_language":
        return {"language": rng.choice([lang, lang, "en", "es", "fr", "de", "ru", "hi", "ja"])}
    if iid == "length_constraints:number_sentences":
        n = sum(text.count(c) for c in ".?!")
        return {"num_sentences": max(1, n + rng.randint(-3, 3)), "relation": rel(rng)}
    if iid == "length_constraints:number_paragraphs":
        return {"num_paragraphs": max(1, text.count("***") + 1 + rng.randint(-1, 1))}
    if iid == "length_constraints:number_words":
        return {"num_words": max(1, words + rng.randint(-30, 30)), "relation": rel(rng)}
    if iid == "length_constraints:nth_paragraph_first_word":
        n = rng.randint(1, 4)
        paras = [p for p in text.split("\n\n") if p.strip()]
        heads = [p.split()[0].strip('"<>*#').lower() for p in paras[n - 1:n]] if len(paras) >= n else []
        first = rng.choice([h for h in heads if h] or ["the"] + ["the", "our"])
        return {"num_paragraphs": n, "nth_paragraph": rng.randint(1, n), "first_word": first}
    if iid == "detectable_content:number_placeholders":
        return {"num_placeholders": rng.randint(1, 4)}
    if iid == "detectable_content:postscript":
        return {"postscript_marker": rng.choice(["P.S.", "P.P.S", "PS:"])}
    if iid == "detectable_format:number_bullet_lists":
        n = sum(1 for l in text.split("\n") if l.lstrip().startswith(("*", "-")))
        return {"num_bullets": max(1, n + rng.randint(-1, 1))}
    if iid == "detectable_format:number_highlighted_sections":
        return {"num_highlights": rng.randint(1, 3)}
    if iid == "detectable_format:multiple_sections":
        sp = rng.choice(["Section", "SECTION", "Part"])
        return {"section_spliter": sp, "num_sections": max(1, text.count(sp + " ") + rng.randint(-1, 1))}
    if iid == "combination:repeat_prompt":
        return {"prompt_to_repeat": prompt}
    if iid == "startend:end_checker":
        ends = [e for e in END_PHRASES if text.lower().rstrip('" ').endswith(e.lower())]
        return {"end_phrase": rng.choice(ends + END_PHRASES[:1])}
    if iid == "change_case:capital_word_frequency":
        n = sum(1 for w in text.split() if w.isupper())
        return {"capital_frequency": max(1, n + rng.randint(-5, 5)), "capital_relation": rel(rng)}
    return {}


IDS = [
    "keywords:existence", "keywords:frequency", "keywords:forbidden_words", "keywords:letter_frequency",
    "language:response_language", "length_constraints:number_sentences", "length_constraints:number_paragraphs",
    "length_constraints:number_words", "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders", "detectable_content:postscript",
    "detectable_format:number_bullet_lists", "detectable_format:constrained_response",
    "detectable_format:number_highlighted_sections", "detectable_format:multiple_sections",
    "detectable_format:json_format", "detectable_format:title", "combination:two_responses",
    "combination:repeat_prompt", "startend:end_checker", "change_case:capital_word_frequency",
    "change_case:english_capital", "change_case:english_lowercase", "punctuation:no_comma", "startend:quotation",
]
ALL_KWARGS = sorted({
    "keywords", "keyword", "frequency", "relation", "forbidden_words", "letter", "let_frequency", "let_relation",
    "language", "num_sentences", "num_paragraphs", "num_words", "nth_paragraph", "first_word",
    "num_placeholders", "postscript_marker", "num_bullets", "num_highlights", "section_spliter", "num_sections",
    "prompt_to_repeat", "end_phrase", "capital_frequency", "capital_relation",
})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--hf-nulls", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    for i in range(a.n):
        prompt = rng.choice(PROMPTS)
        text, lang = response(rng)
        if rng.random() < 0.05:
            text = rng.choice(["My answer is yes.", "My answer is maybe. It depends.", "My answer: no"])
        if rng.random() < 0.05:
            text = prompt + " " + text
        first = IDS[i % len(IDS)]  # every type, evenly
        others = rng.sample([x for x in IDS if x != first], rng.randint(0, 2))
        ids = [first] + others
        kwargs = [instruction(rng, x, text, lang, prompt) for x in ids]
        if a.hf_nulls:
            kwargs = [{k: kw.get(k) for k in ALL_KWARGS} for kw in kwargs]
        print(json.dumps({
            "id": f"r{i}",
            "item": {"prompt": prompt, "instruction_id_list": ids, "kwargs": kwargs},
            "sample": {"output_text": text},
        }, ensure_ascii=False))


if __name__ == "__main__":
    main()
