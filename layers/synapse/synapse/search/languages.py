"""Which language a best-match query is in, its function words, and the stems of its other words.

English inflection is the index's own business (FTS5's `porter` tokenizer stems every token it
indexes and every query token), so English needs only its stop words here. Other languages are
served on the query side: a word of the query's language also matches as the prefix of its Snowball
stem ("geboren" → `gebor*`, "дочери" → `доч*`), which finds the inflected forms the index holds
unstemmed. Cyrillic words are Russian; Latin-script words take the language whose function words
the query uses most (English on a tie or none), so "die" or "hat" stay words in an English question.

Word lists are written as people type them and folded like every query (`fold`), so "für" and "fur",
"её" and "ее" are one entry. Function words never decide a match, but the index keeps them: a
query made only of them still searches them.
"""

# ruff: noqa: RUF001, RUF002 (Cyrillic word lists)
from __future__ import annotations

import functools
from typing import Any

from synapse.index.folding import fold

MIN_STEM = 3  # a shorter stem would match as the prefix of too much
MIN_WORD_PREFIX = 4
_ENGLISH = "english"
_RUSSIAN = "russian"

_STOP_WORDS = {
    _ENGLISH: """
        a about above after again against ago all also am an and any anyone anything are as at be
        because been before being below between both but by can could currently did do does doing
        done down during each either else ever every few for from further get gets got had has have
        having he her here hers herself him himself his how i if in into is it its itself just let
        me more most much my myself no nor not now of off on once only or other our ours ourselves
        out over own please same she should so some someone something such than that the their
        theirs them themselves then there these they this those through to too under until up us
        very was we were what whats when where which while who whom whose why will with would you
        your yours yourself yourselves dont doesnt didnt isnt wasnt arent cant wont im ive hes shes
        thats theres
        tell find show give list look lookup search recall remember remind know user users person
        info information details detail thing things stuff okay ok
    """,
    "german": """
        aber alle allem allen aller alles als also am an andere anderen auch auf aus bei beim bin
        bis bist da damit dann das dass dein deine dem den denn der des dich die dies diese diesem
        diesen dieser dieses dir doch dort du durch ein eine einem einen einer eines er es etwas
        euch euer eure für gegen gewesen gibt hab habe haben hat hatte hatten hier hin ich ihm ihn
        ihnen ihr ihre ihrem ihren ihrer im in ins ist ja jede jedem jeden jeder jedes jetzt kann
        kein keine keinem keinen keiner können man mein meine meinem meinen meiner mich mir mit
        muss müssen nach nicht nichts noch nun nur ob oder ohne sehr sein seine seinem seinen
        seiner sich sie sind so soll sollte sondern um und uns unser unsere unter über viel vom von
        vor war waren was wann warum weil welche welchem welchen welcher welches wenn wer werde
        werden wie wieder will wir wird wo wurde wurden zu zum zur zwischen bitte finde zeige sag
        sage
    """,
    "french": """
        au aux avec ce ces cette dans de des du elle elles en est et eux il ils je la le les leur
        leurs lui ma mais me mes moi mon ne nos notre nous on ou où par pas pour qu que quel quelle
        quels quelles qui quoi quand comment pourquoi sa se ses son sont sur ta te tes toi ton tu
        un une vos votre vous été être avoir a ont était
    """,
    "spanish": """
        al algo como con cual cuales cuando cuándo cómo de del donde dónde el él ella ellas ellos
        en entre era es esa ese eso esta está este esto fue ha hay la las le les lo los me mi mis
        muy no nos o para pero por porque qué que quien quién se ser si sin sobre son su sus también
        te tiene tu tus un una uno y ya yo
    """,
    _RUSSIAN: """
        а без более больше был была были было быть в вам вас весь во вот все всегда всего всех вы
        где да даже для до его ее её ей ему если есть еще ещё же за зачем здесь и из или им их к
        как какая какие каким какой ко когда кого которая которые который кто куда ли либо мне
        много может можно мой моя мы на над надо наш не него нее неё нет ни них но ну о об однако
        он она они оно от очень по под при про с сам свой себе себя сейчас со сколько так также
        там тебе тебя то того тоже той только том ты у уже хотя чего чей чем что чтобы чья эта эти
        это этот я найди найти покажи скажи расскажи напомни пожалуйста
    """,
}
# Letters of a word that only these languages use: one is enough to tell the language.
_LETTERS = {"german": "äöüß", "french": "àâçèêëîïôœùûÿ", "spanish": "ñ¿¡"}


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    return frozenset(fold(word) for word in _STOP_WORDS[language].split())


def _is_cyrillic(word: str) -> bool:
    return any("\u0400" <= ch <= "\u04ff" for ch in word)


def latin_language(words: list[str], raw: str) -> str:
    """The language of the query's Latin-script words: most function words used, English on a tie."""
    lowered = raw.lower()
    best, best_score = _ENGLISH, sum(w in stop_words(_ENGLISH) for w in words)
    for language in ("german", "french", "spanish"):
        score = sum(w in stop_words(language) for w in words)
        score += 2 * any(letter in lowered for letter in _LETTERS[language])
        if score > best_score:
            best, best_score = language, score
    return best


def language_of(word: str, latin: str) -> str:
    return _RUSSIAN if _is_cyrillic(word) else latin


def is_stop_word(word: str, latin: str) -> bool:
    return word in stop_words(language_of(word, latin))


@functools.cache
def _stemmer(language: str) -> Any:
    import Stemmer  # PyStemmer (C): imported by the first query that needs a stem, not at cold start

    return Stemmer.Stemmer(language)


@functools.lru_cache(maxsize=4096)
def stem(word: str, latin: str) -> str | None:
    """The prefix the word's other forms share, or None where the index's porter suffices (English)
    or the stem is too short to use as a prefix. A stem that is the whole word is still a prefix
    (of at least MIN_WORD_PREFIX letters): German compounds start with it ("krank" → Krankmeldung)."""
    language = language_of(word, latin)
    if language == _ENGLISH:
        return None
    stemmed = fold(_stemmer(language).stemWord(word))
    if stemmed == word:
        return word if len(word) >= MIN_WORD_PREFIX else None
    return stemmed if MIN_STEM <= len(stemmed) < len(word) else None
