"""The likelihood reward's real endpoint, built here: two tiny random-weight causal LMs, each
with a tokenizer trained in-process on a built-in corpus (no downloads), saved with
``save_pretrained`` and served by ``server.py`` (one process per model, per test module).

- ``bpe``: byte-level BPE (GPT-2/Qwen style), no BOS. Characters it never merged come back
  one byte per token, which decoded alone are U+FFFD.
- ``spm``: SentencePiece style (Metaspace pre-tokenizer and decoder, BPE with byte fallback)
  that adds a BOS ``<s>``: decoded one by one, its tokens lose their leading space.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
SERVER = HERE / "server.py"
# The tests import oracle.py by name (pytest's importlib mode puts no test folder on the path).
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
KINDS = ("bpe", "spm")

_COUNTRIES = [
    ("France", "Paris"), ("Germany", "Berlin"), ("Japan", "Tokyo"), ("Italy", "Rome"),
    ("Spain", "Madrid"), ("Egypt", "Cairo"), ("Peru", "Lima"), ("Kenya", "Nairobi"),
    ("Austria", "Vienna"), ("Norway", "Oslo"),
]
_EXTRA = [
    "Le café est très chaud, et la crème brûlée aussi.",
    "Die Straße ist groß, und das Wetter ist heiß.",
    "日本の首都は東京です。日本語を話します。",
    "Élise mange une pêche près de la fenêtre.",
    "The answer is 42, because six times seven is forty-two.",
    "Reasoning step by step, we add the numbers and check the result.",
    "Answer: the mitochondria is the powerhouse of the cell.",
]


def corpus() -> list[str]:
    """A few hundred sentences: capitals, arithmetic, reasoning phrases, some non-ASCII."""
    out = []
    for (country, city), form in itertools.product(_COUNTRIES, range(3)):
        out += [
            f"What is the capital of {country}?\nAnswer: {city}",
            f"The capital of {country} is {city}.",
            f"Question: name the capital of {country}. Reasoning: it is {city}.",
        ][form:form + 1]
    for a, b in itertools.product(range(2, 12), range(2, 8)):
        out.append(f"What is {a} times {b}? Let me think. {a} times {b} is {a * b}.\nAnswer: {a * b}")
    out += _EXTRA * 6
    return out


def _bpe_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus(), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
    )


def _spm_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Sequence([
        decoders.ByteFallback(), decoders.Metaspace(replacement="▁", prepend_scheme="always"),
    ])
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    # Byte fallback needs the 256 byte pieces in the model's vocabulary (as Llama's has them);
    # the trainer does not make them, so they are appended to the trained model.
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    base = len(vocab)
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = base + b
    spec["model"]["byte_fallback"] = True
    tok = Tokenizer.from_str(json.dumps(spec))
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="</s>", clean_up_tokenization_spaces=False,
    )


def build_model(kind: str, out: Path) -> Path:
    """Tokenizer and model of ``kind`` into ``out``: random weights (seed 0) then a few
    optimizer steps on the corpus. A freshly initialised model is near uniform (every token
    about -log(vocab)), so every reduction of every text would look alike and a reward that
    mixed rows up would pass; a little training spreads the target probabilities over (0, 1)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    tok = _bpe_tokenizer() if kind == "bpe" else _spm_tokenizer()
    torch.manual_seed(0)
    common = dict(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    if kind == "bpe":
        model = Qwen2ForCausalLM(Qwen2Config(bos_token_id=None, **common))
    else:
        model = LlamaForCausalLM(LlamaConfig(bos_token_id=tok.bos_token_id, **common))
    _train(model, tok)
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _train(model, tok, steps: int = 60, batch: int = 24) -> None:
    import torch

    texts = corpus()
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        pick = torch.randint(len(texts), (batch,), generator=gen).tolist()
        enc = tok([texts[i] for i in pick], return_tensors="pt", padding=True)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        loss = model(**enc, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("likelihood_models")
    return {kind: build_model(kind, base / kind) for kind in KINDS}


@dataclass
class Server:
    kind: str
    name: str
    base_url: str
    model_dir: Path
    proc: subprocess.Popen

    @property
    def root(self) -> str:
        return self.base_url[: -len("/v1")]

    def get(self, path: str):
        with urllib.request.urlopen(self.root + path, timeout=30) as r:
            body = r.read()
            return r.status, (json.loads(body) if body else None)

    def post(self, path: str, body) -> tuple[int, dict]:
        """``(status, json)`` of a POST; an HTTP error's body too."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.root + path, data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stats(self) -> dict:
        return self.get("/stats")[1]

    def reset(self) -> None:
        self.post("/reset", {})

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        if self.proc.stdout:
            self.proc.stdout.close()


def start_server(model_dir: Path, name: str, kind: str, delay_ms: float = 0) -> Server:
    """``server.py`` on the model; returns once it printed its port (it is listening then)."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--model-dir", str(model_dir), "--served-name", name,
         "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        err = proc.stderr.read()
        proc.wait()
        raise RuntimeError(f"server.py did not start: {err}")
    # Nothing reads stderr from here on: a server that logged a lot must not block on it.
    proc.stderr.close()
    info = json.loads(line)
    return Server(kind=kind, name=name, base_url=info["base_url"], model_dir=model_dir, proc=proc)


@pytest.fixture(scope="module", params=KINDS)
def server(request, model_dirs):
    """One server per tokenizer kind, for the module; killed (and waited for) afterwards."""
    kind = request.param
    srv = start_server(model_dirs[kind], f"tiny-{kind}", kind)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def launch(model_dirs):
    """``launch(kind, delay_ms=0) -> Server``: an extra server a test owns (and may kill);
    every one still running is stopped at the end of the session."""
    started: list[Server] = []

    def run(kind: str, delay_ms: float = 0, name: Optional[str] = None) -> Server:
        srv = start_server(model_dirs[kind], name or f"tiny-{kind}", kind, delay_ms)
        started.append(srv)
        return srv

    yield run
    for srv in started:
        srv.stop()
