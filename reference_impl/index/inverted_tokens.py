"""The tokenizer an INVERTED index records, modelled: text -> (token, position) pairs.

The index's settings (``params`` in metadata.lance, ``tokenizer`` in the old tokens.lance)
name a base tokenizer and filters applied in this order (pylance's text tokenizer):

1. base tokenizer: ``simple`` (maximal runs of alphanumeric characters) or ``whitespace``
   (split on ASCII whitespace); each token's *position* is its index in this stream;
2. ``max_token_length``: tokens of that many UTF-8 bytes or more are dropped;
3. ``lower_case``: each character lower-cased on its own;
4. ``stem``: the Snowball English stemmer (``language`` "English"): Snowball 2's up to
   pylance 10.0.0, Snowball 3's from 11.0.0 (:data:`SNOWBALL_3`, the one modelled);
5. ``remove_stop_words``: tokens in the stop list dropped (``custom_stop_words`` when given,
   else the English list of the writer's generation: :data:`STOP_LISTS`) — after stemming,
   so a stem that is a stop word is dropped too;
6. ``ascii_folding``: non-ASCII letters folded to ASCII.

Dropped tokens leave gaps: positions are those of step 1.

What is not modelled is refused by :func:`model` (UnsupportedIndex naming the setting): other
base tokenizers, languages other than English for stemming or stop words, identifier or
numeric splitting, and stemming when the optional ``snowballstemmer`` package is absent.
Stems of the Snowball 2 generation (layouts before format_version 2; some writers of
format_version 2) are Snowball 3's but for the tokens starting like a stem the two were
measured to differ on, which are judged neither way.
Within a modelled setting, a text the model cannot reproduce exactly (a character whose
alphanumeric class may differ from the writer's; non-ASCII text under ASCII folding, whose
table is not reproduced) is answered None: not judged, never guessed.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from reference_impl.errors import UnsupportedIndex

#: The English stop words removed under ``remove_stop_words`` by pylance up to the 4.x
#: releases at least (0.26.1, 0.38.3, 4.0.2 measured): tantivy's English list, the same as
#: Lucene's English analyzer.
ENGLISH_STOP_WORDS = frozenset((
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with").split())
#: The English stop words pylance 14.0.2 and 9.0.1 both remove (both write the partitioned
#: layout of format_version "2"), measured: each of 20,281 distinct words (the words of
#: English prose and candidate stop words: pronouns, auxiliaries, contractions, negations)
#: indexed after a kept word with the whitespace tokenizer; these are the ones dropped.
ENGLISH_STOP_WORDS_V2 = frozenset((
    "a about above after again against all am an and any are as at be because been before "
    "being below between both but by can did do does doing down during each few for from "
    "further had has have having he he'd he'll he's her here hers herself him himself his "
    "how i i'd i'll i'm i've if in into is it it's its itself just me more most my myself "
    "now of off on once only or other our ours ourselves out over own re same she she'd "
    "she'll she's should so some such than that the their theirs them themselves then there "
    "these they they'd they'll they're they've this those through to too under until up "
    "very was we we'd we'll we're we've were what when where which while who whom why will "
    "with you you'd you'll you're you've your yours yourself yourselves").split())
#: The words 9.0.1 removes too and 14.0.2 keeps (negations and clitics); a writer of the
#: same layout may do either, so a token among them is not judged.
ENGLISH_STOP_WORDS_V2_UNSURE = frozenset((
    "ain aren aren't couldn couldn't d didn didn't doesn doesn't don don't hadn hadn't hasn "
    "hasn't haven haven't isn isn't ll m ma mightn mustn mustn't needn no nor not o s shan "
    "shan't shouldn shouldn't t ve wasn wasn't weren weren't won won't wouldn wouldn't "
    "y").split())
#: the English stop lists by the writer generation the index layout tells: (the words every
#: measured release of it removes, the words some remove and some keep)
STOP_LISTS = {"lucene": (ENGLISH_STOP_WORDS, frozenset()),
              "v2": (ENGLISH_STOP_WORDS_V2, ENGLISH_STOP_WORDS_V2_UNSURE)}
_TOKEN_CHARS = ("Lu", "Ll", "Lt", "Lm", "Lo", "Nd")
_ALNUM_RUNS = re.compile(r"[^\W_]+")
_ASCII_SPACE = re.compile(r"[ \t\n\x0c\r]+")
#: settings that change tokens and are not modelled: refused when set
_UNMODELLED_FLAGS = ("split_identifiers", "split_on_numerics", "preserve_original",
                     "index_operators")


def split_simple(text: str) -> list[str] | None:
    """Tokens of the ``simple`` base tokenizer (maximal runs of alphanumeric characters), or
    None when ``text`` holds a character whose class may differ between Python's and the
    writer's notion of alphanumeric (then the text is not judged)."""
    if text.isascii():
        return _ALNUM_RUNS.findall(text)
    for c in text:
        if not c.isascii() and not c.isspace() and unicodedata.category(c) not in _TOKEN_CHARS:
            if c.isalnum() or unicodedata.category(c).startswith(("M", "N")):
                return None
    return _ALNUM_RUNS.findall(text)


def split_whitespace(text: str) -> list[str]:
    """Tokens of the ``whitespace`` base tokenizer (split on ASCII whitespace)."""
    return [t for t in _ASCII_SPACE.split(text) if t]


#: The English stemmer generations: pylance up to 10.0.0 stems with Snowball 2's English
#: algorithm, 11.0.0 to 14.0.2 with Snowball 3's (measured on 20,223 distinct English
#: words: 0.38.3, 9.0.1 and 10.0.0 agree with snowballstemmer 2.2.0 on every one, 11.0.0,
#: 13.0.0 and 14.0.2 with 3.1.1). The partitioned layout of format_version "2" (9.0.1 on)
#: does not tell the two apart (10.0.0 and 11.0.0 write the same keys). The kit stems with
#: Snowball 3 and, for a writer that may stem (or stems) with Snowball 2, leaves unjudged
#: every token that starts like a stem on which the two were measured to differ
#: (:data:`STEM_UNSURE_PREFIXES`).
SNOWBALL_2, SNOWBALL_3, SNOWBALL_2_OR_3 = "snowball2", "snowball3", "snowball2or3"
#: Snowball 2 -> 3 stems measured to differ: added ad/add, adding, odding od/odd, emergency
#: emerg/emergenc, evening even/evening, inter* (internal intern/internal, interval
#: interv/interval, interfering, international), organ* (organize organ/organiz), past*
#: (paste past/paste), univers* (universal univers/universal); Snowball 3's exceptional
#: prefixes include "later" too. A token starting so may be either generation's stem.
STEM_UNSURE_PREFIXES = ("ad", "od", "emerg", "even", "inter", "organ", "past", "univers",
                        "later")


def english_stemmer():
    """The Snowball 3 English stemmer (``word -> stem``) of the optional ``snowballstemmer``
    package (3.x); refused when the package is absent or of another major version."""
    try:
        from importlib.metadata import version

        import snowballstemmer
        installed = version("snowballstemmer")
    except ImportError:
        raise UnsupportedIndex("INVERTED setting stem=true: stemming is modelled with the "
                               "optional snowballstemmer package, which is not installed",
                               kind="inverted", version="stem=true") from None
    if not installed.startswith("3."):
        raise UnsupportedIndex(f"INVERTED setting stem=true: snowballstemmer {installed} is "
                               "installed, the model needs 3.x", kind="inverted",
                               version="stem=true")
    return snowballstemmer.stemmer("english").stemWord


def _refuse(setting: str, value) -> UnsupportedIndex:
    return UnsupportedIndex(f"INVERTED setting {setting}={value!r} is not modelled",
                            kind="inverted", version=f"{setting}={value}")


@dataclass(frozen=True)
class Model:
    """The recorded settings, checked to be modelled (see :func:`model`)."""

    base: str
    max_bytes: int | None
    lower_case: bool
    stem: object          # None, or word -> stem
    stop_words: frozenset | None
    ascii_folding: bool
    #: tokens the writer may or may not have dropped as stop words (kept by :meth:`stream`;
    #: a check judges them neither way)
    unsure: frozenset = frozenset()
    #: stems that may be another generation's (a check judges tokens starting so neither way)
    unsure_prefixes: tuple = ()

    def is_unsure(self, token: str) -> bool:
        """True when the writer may or may not list ``token`` as the model does (a stop
        word of some writers of the layout, or a stem of either stemmer generation)."""
        return token in self.unsure or (bool(self.unsure_prefixes)
                                        and token.startswith(self.unsure_prefixes))

    def stream(self, text: str) -> list[tuple[str, int]] | None:
        """The (token, position) pairs the writer makes of ``text``, or None when this
        text cannot be reproduced exactly (see the module docstring)."""
        tokens = split_simple(text) if self.base == "simple" else split_whitespace(text)
        if tokens is None or (self.ascii_folding and not text.isascii()):
            return None
        out = []
        for position, token in enumerate(tokens):
            if self.max_bytes is not None and len(token.encode("utf-8")) >= self.max_bytes:
                continue
            if self.lower_case:
                # each character on its own (an ASCII token: str.lower, the same)
                token = token.lower() if token.isascii() else "".join(c.lower() for c in token)
            if self.stem is not None:
                token = self.stem(token)
            if self.stop_words is not None and token in self.stop_words:
                continue
            out.append((token, position))
        return out


def model(params: dict | None, stop_list: str = "lucene", stemmer: str = SNOWBALL_3) -> Model:
    """The model of the tokenizer ``params`` records; UnsupportedIndex naming the first
    setting that is not modelled (or None params: no settings recorded). ``stop_list``
    names the English stop list of the writer's generation (:data:`STOP_LISTS`: "v2" for
    the partitioned layout of format_version "2", "lucene" before), ``stemmer`` its
    stemmer generation (:data:`SNOWBALL_3`; for :data:`SNOWBALL_2` or
    :data:`SNOWBALL_2_OR_3` Snowball 3 stems with the tokens of
    :data:`STEM_UNSURE_PREFIXES` unsure)."""
    if params is None:
        raise UnsupportedIndex("INVERTED index records no tokenizer settings",
                               kind="inverted", version="params=None")
    lance_tokenizer = params.get("lance_tokenizer")
    if lance_tokenizer not in (None, "text"):
        raise _refuse("lance_tokenizer", lance_tokenizer)
    base = params.get("base_tokenizer") or "simple"
    if base not in ("simple", "whitespace"):
        raise _refuse("base_tokenizer", base)
    for flag in _UNMODELLED_FLAGS:
        if params.get(flag):
            raise _refuse(flag, params[flag])
    language = str(params.get("language") or "English").strip('"')
    stem = bool(params.get("stem", False))
    custom = params.get("custom_stop_words")
    remove = bool(params.get("remove_stop_words", False))
    if language != "English" and (stem or (remove and not custom)):
        raise _refuse("language", language)
    stop_words, unsure = None, frozenset()
    if remove:
        stop_words, unsure = (frozenset(custom), frozenset()) if custom else STOP_LISTS[stop_list]
    limit = params.get("max_token_length")
    return Model(base=base, max_bytes=int(limit) if limit else None,
                 lower_case=bool(params.get("lower_case", True)),
                 stem=english_stemmer() if stem else None, stop_words=stop_words,
                 ascii_folding=bool(params.get("ascii_folding", False)), unsure=unsure,
                 unsure_prefixes=STEM_UNSURE_PREFIXES if stem and stemmer != SNOWBALL_3
                 else ())


def exact_tokens(text: str, params: dict | None, stop_list: str = "lucene",
                 stemmer: str = SNOWBALL_3) -> list[str] | None:
    """The tokens the writer makes of ``text`` under ``params`` when the model reproduces
    them exactly, else None (settings not modelled, this text not reproducible, or a token
    the writer may or may not drop)."""
    try:
        m = model(params, stop_list, stemmer)
    except UnsupportedIndex:
        return None
    pairs = m.stream(text)
    if pairs is None or any(m.is_unsure(t) for t, _ in pairs):
        return None
    return [t for t, _ in pairs]
