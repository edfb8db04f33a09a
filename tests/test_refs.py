"""Component references: kind:name, kind:name@VERSION, kind:name@SPECIFIERS, KIND NAME."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from cr.errors import CRError, InvalidRef
from cr.store.refs import KINDS, NAME_RE, Ref, check_kind, check_name, parse_ref, parse_ref_words


# -- the three written forms -------------------------------------------------------------

def test_kind_and_name():
    ref = parse_ref("model:lenet-digits")
    assert ref == Ref("model", "lenet-digits", None)
    assert ref.spec is None
    assert str(ref) == "model:lenet-digits"


def test_exact_version_means_only_that_version():
    ref = parse_ref("dataset:digits@1.0.0")
    assert (ref.kind, ref.name, ref.spec) == ("dataset", "digits", "1.0.0")
    assert ref.matches_version("1.0.0")
    assert ref.matches_version("1.0")  # PEP 440: 1.0 == 1.0.0
    assert not ref.matches_version("1.0.1")
    assert not ref.matches_version("0.9")
    assert not ref.matches_version("1.0.0rc1")
    assert not ref.matches_version("1.0.0.post1")


def test_specifier_set():
    ref = parse_ref("solution:iris@>=1,<2")
    assert ref.spec == ">=1,<2"
    assert str(ref) == "solution:iris@>=1,<2"
    assert [v for v in ("0.9", "1.0", "1.5.3", "2.0", "2.1") if ref.matches_version(v)] == ["1.0", "1.5.3"]


@pytest.mark.parametrize(
    "spec, yes, no",
    [
        ("==1.*", ["1.0", "1.9.9"], ["2.0", "0.9"]),
        ("~=1.2", ["1.2", "1.9"], ["1.1", "2.0"]),
        ("!=1.5", ["1.4", "1.6"], ["1.5", "1.5.0"]),
        (">1.0", ["1.0.1", "3"], ["1.0", "0.1"]),
        ("<=2", ["2.0", "0.1"], ["2.0.1"]),
    ],
)
def test_specifier_operators(spec, yes, no):
    ref = parse_ref(f"model:x@{spec}")
    assert all(ref.matches_version(v) for v in yes), yes
    assert not any(ref.matches_version(v) for v in no), no


def test_whitespace_around_ref_and_spec_is_ignored():
    assert parse_ref("  model:x  ") == Ref("model", "x", None)
    assert parse_ref("model:x@ 1.0 ") == Ref("model", "x", "1.0")
    assert parse_ref("model:x@>=1, <2").matches_version("1.5")


def test_every_kind_is_accepted():
    for kind in KINDS:
        assert parse_ref(f"{kind}:abc").kind == kind
        assert check_kind(kind) == kind


def test_names_allowed_characters():
    for name in ("a", "0", "a.b", "a_b", "a-b", "lenet-5.v2_x", "a" * 128):
        assert parse_ref(f"model:{name}").name == name
        assert check_name(name) == name


def test_kind_argument_fills_in_missing_kind():
    assert parse_ref("lenet", kind="model") == Ref("model", "lenet", None)
    assert parse_ref("lenet@2.0", kind="model") == Ref("model", "lenet", "2.0")
    # an explicit kind that agrees is fine
    assert parse_ref("model:lenet", kind="model") == Ref("model", "lenet", None)


def test_kind_argument_must_agree_with_written_kind():
    with pytest.raises(InvalidRef) as exc:
        parse_ref("dataset:lenet", kind="model")
    assert "'dataset'" in str(exc.value) and "'model'" in str(exc.value)


def test_no_kind_at_all_is_refused():
    with pytest.raises(InvalidRef) as exc:
        parse_ref("lenet")
    assert "'lenet'" in str(exc.value)
    assert exc.value.hint  # tells the user how to write it


# -- two-word form -------------------------------------------------------------------------

def test_two_words():
    assert parse_ref_words(["model", "lenet"]) == Ref("model", "lenet", None)
    assert parse_ref_words(("model", "lenet@1.0.0")) == Ref("model", "lenet", "1.0.0")
    assert parse_ref_words(["model", "lenet@>=1,<2"]) == Ref("model", "lenet", ">=1,<2")
    assert parse_ref_words(["model", "model:lenet"]) == Ref("model", "lenet", None)


def test_one_word_is_a_full_ref():
    assert parse_ref_words(["dataset:digits@1.0.0"]) == Ref("dataset", "digits", "1.0.0")
    with pytest.raises(InvalidRef):
        parse_ref_words(["digits"])


def test_two_words_same_as_one_word():
    for kind in KINDS:
        for tail in ("n", "n@1.0", "n@>=1,<2"):
            assert parse_ref_words([kind, tail]) == parse_ref(f"{kind}:{tail}")


@pytest.mark.parametrize("words", [[], ["model", "a", "b"], ["model", "a", "b", "c"]])
def test_wrong_word_count(words):
    with pytest.raises(InvalidRef) as exc:
        parse_ref_words(words)
    assert "kind:name" in str(exc.value)


def test_two_words_unknown_kind():
    with pytest.raises(InvalidRef) as exc:
        parse_ref_words(["modle", "lenet"])
    assert "'modle'" in str(exc.value)
    assert "model" in exc.value.hint


def test_two_words_conflicting_kind():
    with pytest.raises(InvalidRef) as exc:
        parse_ref_words(["model", "dataset:lenet"])
    assert "'dataset'" in str(exc.value)


# -- errors name the bad value ----------------------------------------------------------------

@pytest.mark.parametrize(
    "text, bad",
    [
        ("modle:lenet", "'modle'"),
        ("Model:lenet", "'Model'"),
        ("models:lenet", "'models'"),
    ],
)
def test_unknown_kind(text, bad):
    with pytest.raises(InvalidRef) as exc:
        parse_ref(text)
    assert "unknown kind" in str(exc.value)
    assert bad in str(exc.value)
    assert all(k in exc.value.hint for k in KINDS)


@pytest.mark.parametrize(
    "name",
    ["Lenet", "-lenet", "lenet-", ".x", "x.", "_x", "a b", "a/b", "le\u00f1et", "a" * 129, "a+b", "a*"],
)
def test_bad_names(name):
    with pytest.raises(InvalidRef) as exc:
        parse_ref(f"model:{name}")
    assert repr(name) in str(exc.value) or str(exc.value) == f"cannot parse component reference {'model:' + name!r}"
    with pytest.raises(InvalidRef) as exc2:
        check_name(name)
    assert repr(name) in str(exc2.value)


@pytest.mark.parametrize("text", ["model:", "model:@1.0", ":x", "model:x:y", "", "   ", "@1.0"])
def test_unparseable(text):
    with pytest.raises(InvalidRef) as exc:
        parse_ref(text)
    assert str(exc.value) == f"cannot parse component reference {text!r}"
    assert "kind:name" in exc.value.hint


@pytest.mark.parametrize("version", ["1.x", "1.0.0.x", "1..0", "1.0-beta-gamma", "01-02-xx", "1.0,<2"])
def test_bad_bare_versions(version):
    with pytest.raises(InvalidRef) as exc:
        parse_ref(f"model:x@{version}")
    assert f"invalid version {version!r}" in str(exc.value)
    assert "PEP 440" in exc.value.hint


@pytest.mark.parametrize("spec", [">=abc", "~=1", "=1", ">1 <2", "==1.0 extra", ">=1;", "@1", "latest", ">=1,<<2"])
def test_bad_specifiers(spec):
    with pytest.raises(InvalidRef) as exc:
        parse_ref(f"model:x@{spec}")
    assert spec in str(exc.value)
    assert "specifier" in str(exc.value)


@pytest.mark.parametrize("spec", ["9" * 5000, ">=" + "9" * 5000, "<1," + ">1." + "9" * 5000, "~=1." + "9" * 5000])
def test_versions_past_the_int_limit_are_invalid_not_crashes(spec):
    # Python refuses int() of more than 4300 digits; a ref must fail cleanly when parsed,
    # not later with ValueError when a version is matched against it
    with pytest.raises(InvalidRef) as exc:
        parse_ref(f"model:x@{spec}")
    assert "invalid version" in str(exc.value)


def test_empty_spec_after_at():
    for text in ("model:x@", "model:x@   "):
        with pytest.raises(InvalidRef) as exc:
            parse_ref(text)
        assert "'@'" in str(exc.value)


def test_invalid_ref_is_a_crerror():
    # the CLI turns CRError into "Error: message" + hint, exit 1
    with pytest.raises(CRError):
        parse_ref("nope")


# -- matches_version ----------------------------------------------------------------------------

def test_no_spec_matches_everything():
    ref = Ref("model", "x")
    for v in ("0", "1.0", "2.0rc1", "not a version"):
        assert ref.matches_version(v)


def test_pre_releases_count():
    ref = parse_ref("model:x@>=1.0")
    assert ref.matches_version("2.0rc1")
    assert ref.matches_version("1.1a1")
    assert ref.matches_version("1.1.dev0")
    assert not ref.matches_version("1.0rc1")  # before 1.0 final
    assert parse_ref("model:x@2.0rc1").matches_version("2.0rc1")
    assert not parse_ref("model:x@2.0rc1").matches_version("2.0")
    assert parse_ref("model:x@<2").matches_version("1.9b3")


def test_invalid_candidate_version_never_matches():
    ref = parse_ref("model:x@>=0")
    assert not ref.matches_version("junk")
    assert not ref.matches_version("")


def test_ref_is_hashable_and_comparable():
    assert {parse_ref("model:a@1.0"), parse_ref("model:a@1.0")} == {Ref("model", "a", "1.0")}


# -- property tests ---------------------------------------------------------------------------------

REF_ALPHABET = st.sampled_from(list("model:dataset@<>=!~,.*0123456789abcxyz-_+ \t\n/\\vrcpostdev") + ["\u00e9", "\u0663", "\x00"])


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.text(),
    st.text(REF_ALPHABET),
    st.builds(lambda k, t: f"{k}:{t}", st.sampled_from(KINDS), st.text(REF_ALPHABET)),
    st.builds(lambda k, n, t: f"{k}:{n}@{t}", st.sampled_from(KINDS), st.sampled_from(["x", "a-b"]), st.text(REF_ALPHABET)),
    # numbers past Python's 4300-digit int-string limit
    st.builds(lambda op, n: f"model:x@{op}1.{'9' * n}", st.sampled_from(["", "==", ">=", "<", "~=", "!="]), st.integers(4290, 4400)),
))
def test_parse_ref_raises_only_invalid_ref(text):
    try:
        ref = parse_ref(text)
    except InvalidRef as exc:
        assert exc.message  # a real message, not an empty one
        return
    # whatever parses is a fully valid ref: known kind, valid name, and it re-parses identically
    assert ref.kind in KINDS
    assert NAME_RE.match(ref.name)
    assert parse_ref(str(ref)) == ref


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(REF_ALPHABET), max_size=4))
def test_parse_ref_words_raises_only_invalid_ref(words):
    try:
        parse_ref_words(words)
    except InvalidRef:
        pass


names = st.from_regex(NAME_RE, fullmatch=True)
release = st.lists(st.integers(0, 999), min_size=1, max_size=4).map(lambda xs: ".".join(map(str, xs)))


@st.composite
def versions(draw, local=True):
    text = draw(release)
    if draw(st.booleans()):
        text = f"{draw(st.integers(1, 3))}!{text}"
    pre = draw(st.sampled_from(["", "a", "b", "rc"]))
    if pre:
        text += f"{pre}{draw(st.integers(0, 20))}"
    if draw(st.booleans()):
        text += f".post{draw(st.integers(0, 20))}"
    if draw(st.booleans()):
        text += f".dev{draw(st.integers(0, 20))}"
    if local and draw(st.booleans()):
        text += "+" + draw(st.from_regex(r"[a-z0-9]{1,6}(\.[a-z0-9]{1,6}){0,2}", fullmatch=True))
    return str(Version(text))  # canonical form


@st.composite
def specifier_sets(draw):
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["==", "!=", ">=", "<=", ">", "<", "~="]))
        v = draw(versions(local=False))
        if op == "~=" and len(Version(v).release) < 2:
            v = str(Version(v).release[0]) + ".0"  # ~= needs at least two release segments
        parts.append(op + v)
    return ",".join(parts)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(KINDS), names, st.one_of(st.none(), versions(), specifier_sets()))
def test_round_trip(kind, name, spec):
    text = f"{kind}:{name}" + (f"@{spec}" if spec else "")
    ref = parse_ref(text)
    assert (ref.kind, ref.name, ref.spec) == (kind, name, spec)
    assert str(ref) == text
    assert parse_ref(str(ref)) == ref
    assert parse_ref_words([kind, text.split(":", 1)[1]]) == ref


@settings(max_examples=300, deadline=None)
@given(versions(local=False), versions(local=False))
def test_exact_and_lower_bound_agree_with_version_order(wanted, candidate):
    assert parse_ref(f"model:x@{wanted}").matches_version(candidate) == (Version(candidate) == Version(wanted))
    assert parse_ref(f"model:x@>={wanted}").matches_version(candidate) == (Version(candidate) >= Version(wanted))
    assert parse_ref(f"model:x@<={wanted}").matches_version(candidate) == (Version(candidate) <= Version(wanted))
