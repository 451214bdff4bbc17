# ruff: noqa: RUF001 (queries in many scripts)
"""The embedding model (issue 33 item 1): the pinned file or nothing, vectors of the promised shape,
meaning that ranks a paraphrase above an unrelated fact, a lazy import, and the language guard."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from synapse.embedding import (
    ModelIntegrityError,
    ModelUnavailable,
    default_embedder,
    embed_query,
    minilm,
    serves,
)
from synapse.embedding.minilm import (
    BATCH_SIZE,
    DIMENSIONS,
    MODEL_SHA256,
    PADDING_PER_RUN,
    QUESTIONS_SHA256,
    MiniLM,
    batches,
    model_path,
    questions_model_path,
    sha256_of,
)
from synapse.embedding.wordpiece import VOCAB_PATH, VOCAB_SHA256

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_model_file_is_the_pinned_one():
    # Given the model package the project's requirements install
    # When its file is hashed
    # Then it is the sha256 the embedder pins (a new release of the package must change both together)
    assert sha256_of(model_path()) == MODEL_SHA256


def test_the_vocabulary_is_the_pinned_one():
    assert sha256_of(VOCAB_PATH) == VOCAB_SHA256


def test_a_model_file_that_is_not_the_pinned_one_is_refused(tmp_path):
    # Given a file in the model's place whose bytes differ from the pinned model's by one byte
    impostor = tmp_path / "model.onnx"
    data = bytearray(model_path().read_bytes())
    data[-1] ^= 0xFF
    impostor.write_bytes(bytes(data))
    # When the embedder is to embed with it
    # Then it refuses, naming the file, the hash it found and the one it expected
    with pytest.raises(ModelIntegrityError) as raised:
        MiniLM(model=impostor).embed(["Wife is Anna"])
    message = str(raised.value)
    assert str(impostor) in message and MODEL_SHA256 in message and sha256_of(impostor) in message


def _counting_vocabulary_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = minilm.verified

    def counting(path: Path, expected: str) -> bytes:
        reads.append(path)
        return real(path, expected)

    monkeypatch.setattr(minilm, "verified", counting)
    minilm.tokenizer.cache_clear()
    return reads


def test_the_vocabulary_is_read_and_checked_once_per_process(monkeypatch):
    # Given a process that builds the embedder twice (e.g. a test's fresh one beside the default)
    reads = _counting_vocabulary_reads(monkeypatch)
    # When both are built
    first, second = MiniLM(), MiniLM()
    # Then vocab.txt was read and hashed once (~5 ms), and both use that one tokenizer
    assert reads.count(VOCAB_PATH) == 1
    assert first.tokenizer is second.tokenizer


def test_a_build_without_the_model_reads_no_vocabulary_when_asked_for_it(monkeypatch):
    # Given a build without the model package (every indexed batch asks for the embedder)
    reads = _counting_vocabulary_reads(monkeypatch)

    def not_installed() -> Path:
        raise ModelUnavailable("not installed")

    monkeypatch.setattr(minilm, "model_path", not_installed)
    # When the embedder is asked for three times
    for _ in range(3):
        with pytest.raises(ModelUnavailable):
            MiniLM()
    # Then the vocabulary was never read: the missing model is found first
    assert reads == []


def test_the_questions_model_in_the_repository_is_the_pinned_one():
    # Given a checkout; When the questions' model it holds is hashed
    path = questions_model_path()
    # Then it is found beside its recipe and is the sha256 the embedder pins
    assert path == ROOT / "layers" / "embedding" / "synapse_minilm_questions" / "model.onnx"
    assert sha256_of(path) == QUESTIONS_SHA256


def test_the_questions_model_is_what_its_recipe_derives_from_the_pinned_model():
    # Given the recipe, the pinned model and the pinned onnx / onnxruntime
    # When it derives the questions' model again, into a temporary file
    result = subprocess.run(  # noqa: S603 - the test's own interpreter, the repository's script
        [sys.executable, str(ROOT / "layers" / "embedding" / "derive_questions_model.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    # Then the bytes are the pinned ones: the committed file is exactly that derivation
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(the pinned file)" in result.stdout


def test_a_questions_model_that_is_not_the_pinned_one_is_refused(tmp_path, monkeypatch):
    # Given a questions' model one byte off
    impostor, genuine = tmp_path / "model.onnx", questions_model_path()
    assert genuine is not None
    data = bytearray(genuine.read_bytes())
    data[-1] ^= 0xFF
    impostor.write_bytes(bytes(data))
    monkeypatch.setattr(minilm, "questions_model_path", lambda: impostor)
    # When a fresh embedder meets its first question
    # Then it refuses, naming both hashes
    with pytest.raises(ModelIntegrityError) as raised:
        MiniLM().embed_query("who is his partner")
    assert QUESTIONS_SHA256 in str(raised.value) and sha256_of(impostor) in str(raised.value)


def test_a_build_without_the_questions_model_embeds_questions_with_the_shipped_one(monkeypatch):
    monkeypatch.setattr(minilm, "questions_model_path", lambda: None)
    model = MiniLM()
    question = "does he eat meat?"
    np.testing.assert_array_equal(model.embed_query(question), model.embed([question])[0])


def test_a_questions_model_this_runtime_cannot_run_falls_back_to_the_stored_one(monkeypatch):
    # Given an ONNX Runtime that cannot build the questions' graph (say, an op missing on a platform)
    build = minilm._session

    def without_the_questions_graph(weights: bytes, *threads: int):
        if hashlib.sha256(weights).hexdigest() == QUESTIONS_SHA256:
            raise RuntimeError("NOT_IMPLEMENTED: MultiHeadAttention")
        return build(weights, *threads)

    monkeypatch.setattr(minilm, "_session", without_the_questions_graph)
    model = MiniLM()
    # When a question is embedded
    # Then it is, by the stored texts' model: search keeps its meaning, only slower
    question = "who is his boss?"
    np.testing.assert_array_equal(model.embed_query(question), model.embed([question])[0])


def test_a_question_vector_agrees_with_the_stored_models_and_ranks_as_it_does():
    # Given the bench's English questions and the memories that answer them
    data = json.loads((ROOT / "bench" / "data" / "questions.json").read_text())
    questions = [q["q"] for q in data["questions"] if serves(q["q"])]
    model = default_embedder()
    # When each is embedded as a question (int8 arithmetic) and as a stored text (the shipped model)
    asked = np.vstack([model.embed_query(q) for q in questions])
    stored = model.embed(questions)
    # Then the two agree closely, so the question's similarities to stored vectors barely move
    cosines = (asked * stored).sum(axis=1)
    assert cosines.min() > 0.98 and cosines.mean() > 0.99
    np.testing.assert_allclose(np.linalg.norm(asked, axis=1), 1.0, atol=1e-5)
    # And against the memories, the nearest memory is the same for nearly every question (204: 94 %),
    # and where it is not, the two were all but tied by the shipped model (0.027 apart at most)
    memories = model.embed([m["content"] for m in data["memories"]])
    by_question, by_stored = memories @ asked.T, memories @ stored.T
    nearest = by_question.argmax(axis=0)
    assert (nearest == by_stored.argmax(axis=0)).mean() >= 0.9
    assert (by_stored.max(axis=0) - by_stored[nearest, np.arange(len(questions))]).max() < 0.03


def test_vectors_are_float32_unit_rows_in_the_order_of_the_texts():
    # Given texts of very different lengths (the embedder batches them sorted by length)
    texts = ["Wife is Anna", "", "Drives a 2019 Tesla Model 3 " * 60, "Allergic to peanuts"]
    # When they are embedded together and one by one
    together = default_embedder().embed(texts)
    alone = np.vstack([default_embedder().embed([text]) for text in texts])
    # Then each row is the text's own unit-length float32 vector of the model's dimensions
    assert together.shape == (4, DIMENSIONS) and together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(together, alone, atol=1e-4)
    assert default_embedder().embed([]).shape == (0, DIMENSIONS)


def test_texts_run_shortest_first_in_runs_that_pad_little():
    # Given texts of mixed lengths (in word pieces), and many of one length
    lengths = [40, 9, 135, 12, 30, 10, 100, 11, 29, 89] + [20] * (BATCH_SIZE + 3)
    # When they are cut into runs of the model
    runs = batches(lengths)
    # Then each text is in one run, shortest first, no run over BATCH_SIZE
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    ordered = [lengths[i] for run in runs for i in run]
    assert ordered == sorted(lengths) and max(map(len, runs)) == BATCH_SIZE
    # And each text a run takes in pads the run by no more than another run would cost
    for run in runs:
        width = max(lengths[i] for i in run)
        assert sum(width - lengths[i] for i in run) <= PADDING_PER_RUN * (len(run) - 1)
    assert [lengths[i] for i in runs[-1]] == [135] and batches([]) == []


def test_a_paraphrase_is_closer_than_an_unrelated_fact():
    # Given a question that shares no word with the fact that answers it
    question = embed_query("who is his partner")
    wife, car = default_embedder().embed(["Wife is Anna", "Drives a Tesla"])
    # Then the answer is clearly closer in meaning than an unrelated fact
    assert float(question @ wife) > float(question @ car) + 0.1


def test_a_query_vector_is_cached_and_read_only():
    first = embed_query("does he have a dog?")
    assert embed_query("does he have a dog?") is first
    assert first.shape == (DIMENSIONS,) and not first.flags.writeable


def test_importing_the_package_loads_neither_numpy_nor_onnxruntime():
    # Given a fresh interpreter; When it imports synapse.embedding (what a handler's module level does)
    code = "import sys, synapse.embedding; print(sorted({'numpy', 'onnxruntime'} & set(sys.modules)))"
    result = subprocess.run(  # noqa: S603 - the test's own interpreter
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(ROOT / "layers" / "synapse")},
        capture_output=True,
        text=True,
        check=True,
    )
    # Then neither heavy module is loaded until something embeds
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "text",
    [
        "what's his partner's name",
        "Which car does he drive?",
        "Wife is Anna, married since 2015",
        "Does Müller's café still open at 8?",
        "die hard fans",  # English words that are also German ones
    ],
)
def test_english_is_served(text):
    assert serves(text)


@pytest.mark.parametrize(
    "text",
    [
        "Wer ist seine Frau?",
        "Qui est sa femme ?",
        "¿Quién es su esposa?",
        "Chi è sua moglie?",
        "Quem é a esposa dele?",
        "Wie is zijn vrouw?",
        "Кто его жена?",
        "他的妻子是谁",
        "2019 / 42",
        "",
    ],
)
def test_other_languages_and_texts_without_words_are_not_served(text):
    # the model is English-only: for these the caller keeps to lexical search
    assert not serves(text)


def test_each_model_loads_on_its_first_use_only():
    # Given a fresh interpreter; When it asks a question only
    code = (
        "import synapse.embedding as e; m = e.default_embedder(); e.embed_query('his wife?'); "
        "print(m._stored is None, m._questions is not None)"
    )
    result = subprocess.run(  # noqa: S603 - the test's own interpreter
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(ROOT / "layers" / "synapse")},
        capture_output=True,
        text=True,
        check=True,
    )
    # Then the questions' model is loaded and the stored texts' model is not (a search's cold start)
    assert result.stdout.split() == ["True", "True"]


def test_the_language_guard_agrees_with_search_on_the_bench_questions():
    # Given the bench's questions (English, German and Russian) and search's own language detection
    from synapse.search.languages import latin_language

    questions = [
        q["q"] for q in json.loads((ROOT / "bench" / "data" / "questions.json").read_text())["questions"]
    ]

    def english(text):
        words = re.findall(r"\w+", text.lower())
        return not any("\u0400" <= ch <= "\u04ff" for ch in text) and latin_language(words, text) == "english"

    # Then the model serves exactly the English ones
    assert [q for q in questions if serves(q) != english(q)] == []
    assert sum(map(serves, questions)) > 150


def test_importing_the_package_pins_numpys_threads_unless_told_otherwise():
    # Given a process whose OMP_NUM_THREADS was chosen by its operator; When it imports the package
    code = (
        "import os, synapse.embedding; "
        "print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'])"
    )
    env = {"PYTHONPATH": str(ROOT / "layers" / "synapse"), "OMP_NUM_THREADS": "4"}
    result = subprocess.run(  # noqa: S603 - the test's own interpreter
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    # Then BLAS gets one thread, and the operator's choice stands
    assert result.stdout.split() == ["1", "4"]


@pytest.mark.parametrize(
    ("environ", "cores", "expected"),
    [
        ({}, 2, 2),  # the local runner: every CPU it may use
        ({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"}, 2, 1),  # a third of a vCPU: one thread
        ({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1769"}, 2, 1),  # one vCPU
        ({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "3538"}, 2, 2),  # two
        ({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "10240"}, 6, 5),  # never more than the machine shows
        ({"SYNAPSE_EMBEDDING_THREADS": "3", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"}, 2, 3),
        ({"SYNAPSE_EMBEDDING_THREADS": "0"}, 2, 2),  # not a thread count: ignored
    ],
)
def test_stored_texts_run_on_the_cpus_the_process_has(monkeypatch, environ, cores, expected):
    # Given a process that may run on `cores` CPUs, in the environment given
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    # When the stored texts' session chooses its threads
    # Then it takes an operator's choice, else a Lambda's whole vCPUs, else every CPU
    assert minilm.threads(environ) == expected


def test_a_stored_texts_vector_does_not_depend_on_the_thread_count(monkeypatch):
    # Given the same texts embedded by a session on one thread and by one on two
    texts = ["Nadia: the treehouse plan looks fine", "Allergic to peanuts", "Team standup at 9:15 on Mondays"]
    monkeypatch.setenv("SYNAPSE_EMBEDDING_THREADS", "1")
    alone = MiniLM().embed(texts)
    monkeypatch.setenv("SYNAPSE_EMBEDDING_THREADS", "2")
    shared = MiniLM().embed(texts)
    # Then the vectors are the same (what the index stores does not depend on the machine's CPUs)
    np.testing.assert_allclose(shared, alone, atol=1e-6)
