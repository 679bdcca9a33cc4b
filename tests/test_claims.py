import pandas as pd
import pytest

from evalkit import EvalkitWarning, claims, models, tcva
from evalkit._testing import ChatServer
from tests._extras import needs_openai


@pytest.mark.parametrize(
    "text, message",
    [
        ('Here you go: ["a"]', "not a JSON array"),
        ('```json\n["a"]\n```', "not a JSON array"),
        ('["a", "b"', "not a JSON array"),  # truncated
        ('{"claims": ["a"]}', "expected a JSON array; got dict"),
        ('["a", ""]', "non-empty string"),
        ('["a", 3]', "non-empty string"),
        ('["a", "b", "c"]', "3 claims; at most 2"),
    ],
)
def test_parse_claims_is_strict(text, message):
    with pytest.raises(claims.ParseError, match=message):
        claims.parse_claims(text, max_claims=2)


def test_parse_claims_accepts_empty_and_strips():
    assert claims.parse_claims("[]") == []
    assert claims.parse_claims(' [" x "] ') == ["x"]


def test_parse_claim_verdicts_rules():
    text = ('[{"claim": 1, "verdict": " MOSTLY ", "reason": "r", "support": "quote"},'
            ' {"claim": 2, "verdict": "partially", "reason": "r", "support": null},'
            ' {"claim": 3, "verdict": "fully", "reason": "r", "support": "   "}]')
    table = claims.parse_claim_verdicts(text, 3)
    assert table["verdict"].tolist() == ["mostly", "partial", "partial"]
    assert table["downgraded"].tolist() == [False, False, True]
    for bad, message in (("[]", "0 verdicts for 3 claims"),
                         ('[{"claim": 2, "verdict": "fully", "support": "q"}]', "numbered 2"),
                         ('[{"verdict": "true", "support": "q"}]', "'true', not one of"),
                         ('["fully"]', "is not an object")):
        with pytest.raises(claims.ParseError, match=message):
            claims.parse_claim_verdicts(bad, 3 if bad == "[]" else 1)


def test_prompts_are_versioned():
    assert claims.EXTRACT_CLAIMS.version != claims.JUDGE_CLAIMS.version
    assert claims.Prompt("p", "x {a}").version != claims.Prompt("p", "y {a}").version


ANSWERS = pd.Series({
    "good": "The kettle has a 2-year warranty. Thanks for asking!",
    "flaky": "The lamp weighs 2 kg.",
    "broken": "The router supports WiFi 6.",
    "empty": "Hello!",
})


def extraction_script(prompt, attempt):
    if "2-year" in prompt:
        return '["The kettle has a 2-year warranty."]'
    if "lamp" in prompt:
        return '["The lamp weighs 2 kg."' if attempt == 1 else '["The lamp weighs 2 kg."]'  # truncated, then fine
    if "router" in prompt:
        return "Sure, here are the claims: none"
    return "[]"


@needs_openai
def test_extract_claims_retries_once_then_flags_the_item(tmp_path):
    cache = models.CallCache(tmp_path / "c.sqlite")
    with ChatServer(extraction_script) as server:
        model = models.OpenAIChat("extractor", base_url=server.url)
        with pytest.warns(EvalkitWarning, match="1 of 4 items failed"):
            table, items = claims.extract_claims(ANSWERS, model, cache=cache, progress=False)
        n = server.requests
        with pytest.warns(EvalkitWarning):
            again, items_again = claims.extract_claims(ANSWERS, model, cache=cache, progress=False)
    assert n == 6  # 4 first calls + 2 retries (flaky, broken)
    assert server.requests == n, "a re-run resumes from the cache"
    assert table["item_id"].tolist() == ["good", "flaky"]
    assert items.loc["flaky", "attempts"] == 2 and pd.isna(items.loc["flaky", "error"])
    assert items.loc["broken", "error"].startswith("unparseable after retry")
    assert pd.isna(items.loc["broken", "n_claims"])
    assert items.loc["empty", "n_claims"] == 0
    assert items.attrs["n_failed"] == 1
    pd.testing.assert_frame_equal(table, again)


@needs_openai
def test_judge_claims_feeds_tcva():
    table = pd.DataFrame({"item_id": ["a", "a", "b", "c"], "claim_idx": [0, 1, 0, 0],
                          "claim": ["Warranty is 2 years.", "It is blue.", "Weighs 2 kg.", "Ships free."]})
    sources = pd.Series({"a": "2-year warranty", "b": "weight 2 kg", "c": "no shipping info", "d": "nothing"})

    def script(prompt, attempt):
        if "Warranty is 2 years." in prompt:
            return ('[{"claim": 1, "verdict": "fully", "reason": "stated", "support": "2-year warranty"},'
                    ' {"claim": 2, "verdict": "none", "reason": "absent", "support": ""}]')
        if "Weighs 2 kg." in prompt:
            return '[{"claim": 1, "verdict": "mostly", "reason": "close", "support": ""}]'
        return "not json"

    with ChatServer(script) as server:
        model = models.OpenAIChat("grader", base_url=server.url)
        with pytest.warns(EvalkitWarning, match="1 of 4 items failed"):
            verdicts, items = claims.judge_claims(table, sources, model, progress=False)
    assert server.requests == 4  # a, b, c (twice); d has no claims and makes no call
    assert verdicts["verdict"].astype(str).tolist() == ["fully", "none", "partial"]
    assert verdicts["downgraded"].tolist() == [False, False, True]
    assert items["n_claims"].tolist() == [2, 1, 1, 0] and items["n_downgraded"].tolist() == [0, 1, 0, 0]
    assert items.loc["c", "error"].startswith("unparseable after retry")
    ok = items[items["error"].isna()]
    scores = tcva.sweep(verdicts, [0.5], items=ok)
    assert scores.loc["a", 0.5] == pytest.approx(0.5 * 0.5)  # mean 0.5, penalty (1 - 1/2) ** 1
    assert scores.loc["d", 0.5] == 0.0


def test_judge_claims_bad_input():
    table = pd.DataFrame({"item_id": ["a"], "claim_idx": [0], "claim": ["x"]})
    with pytest.raises(ValueError, match=r"no text for item\(s\) \['a'\]"):
        claims.judge_claims(table, pd.Series({"b": "src"}), lambda p: "[]", model_id="m")
    with pytest.raises(KeyError, match="claim"):
        claims.judge_claims(table.drop(columns="claim"), pd.Series({"a": "src"}), lambda p: "[]", model_id="m")
    with pytest.raises(TypeError, match="Series"):
        claims.extract_claims(["x"], lambda p: "[]", model_id="m")


@needs_openai
def test_extract_facts_strict_with_retry():
    docs = pd.DataFrame({"doc_id": ["ok", "bad"], "text": ["Dose was 5 mg.", "Nothing to see."]})

    def script(prompt, attempt):
        if "Dose" in prompt:
            return '[{"claim": "Dose was 5 mg.", "prob_fact": 0.9}]'
        return '[{"claim": "x", "prob_fact": 1.5}]'  # out of range: unparseable

    with ChatServer(script) as server:
        model = models.OpenAIChat("facts", base_url=server.url)
        with pytest.warns(EvalkitWarning, match="1 of 2 items failed"):
            facts, items = claims.extract_facts(docs, model, progress=False)
    assert server.requests == 3
    assert facts.to_dict("records") == [{"doc_id": "ok", "claim": "Dose was 5 mg.", "prob_fact": 0.9}]
    assert "prob_fact 1.5" in items.loc["bad", "error"] and items.index.name == "doc_id"
