"""Generate evalkit's synthetic demo data sets into data/demo/ (seeded, reproducible).

Run ``python data/make_demo.py [OUT_DIR]``; by default every file in data/demo/ is rewritten byte for byte the same.
The generating rules are documented in data/demo/README.md. Nothing here is real data.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "demo"
LEVELS = np.array(["none", "minor", "partial", "mostly", "fully"])


def make_tcva(out: Path, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Claim verdicts for 12 documents x 10 systems, with a simulated human rating per summary."""
    n_docs, n_systems = 12, 10
    system_skill = np.linspace(-1.2, 1.2, n_systems)
    doc_difficulty = rng.normal(0.0, 0.5, n_docs)
    claim_rows, item_rows = [], []
    for d in range(n_docs):
        for s in range(n_systems):
            item_id = f"doc{d:02d}-sys{s}"
            quality = system_skill[s] - doc_difficulty[d] + rng.normal(0.0, 0.6)
            # Weaker summaries have fewer claims; about 1 in 15 has none (nothing checkable extracted).
            n_claims = 0 if rng.random() < 0.07 else int(rng.integers(1, 8))
            # Ordered-logit style draw: higher quality shifts verdicts toward "fully".
            cuts = np.array([-2.2, -1.4, -0.6, 0.2])
            latent = quality + rng.logistic(0.0, 0.7, n_claims)
            levels = np.searchsorted(cuts, latent)
            for idx, lvl in enumerate(levels):
                claim_rows.append({"item_id": item_id, "claim_idx": idx, "verdict": LEVELS[lvl]})
            # Annotators punish an unsupported claim more than they reward supported ones.
            if n_claims:
                worst = levels.min() / 4
                mean = levels.mean() / 4
                truth = 1 + 4 * (0.4 * worst + 0.6 * mean)
            else:
                truth = 1 + 4 * (0.35 + 0.1 * np.tanh(quality))
            # Annotators also react to things no extracted claim captures (style, omissions).
            truth += rng.normal(0.0, 0.8)
            ratings = np.clip(np.round(truth + rng.normal(0.0, 1.1, 3)), 1, 5)
            item_rows.append({"item_id": item_id, "human": round(float(ratings.mean()), 4),
                              "document": f"doc{d:02d}", "system": f"sys{s}"})
    pd.DataFrame(claim_rows).to_csv(out / "tcva_verdicts.csv", index=False)
    pd.DataFrame(item_rows).to_csv(out / "tcva_items.csv", index=False)
    return pd.DataFrame(claim_rows), pd.DataFrame(item_rows)


PLACES = ["Aldwick", "Brenmoor", "Caddon", "Dunlow", "Elsmere", "Farrow", "Glenby", "Hollin", "Ivesham", "Jarrow Vale",
          "Kelbrook", "Lonsdale"]
#: A document's facts: (text, the detail a claim can get wrong), each with one number.
FACT_TEMPLATES = ["{p} has {n} residents, according to the {y} census.", "The bridge at {p} opened in {y}.",
                  "The {p} library holds {n} books.", "{p} lies {k} km north of the coast.",
                  "The {p} market runs on {d}s.", "The {p} school was founded in {y}.",
                  "The river through {p} floods about {k} times a decade.", "The {p} festival draws {n} visitors a year."]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def _fact(template: str, p: str, rng: np.random.Generator) -> dict:
    return {"template": template, "p": p, "n": int(rng.integers(2, 90)) * 100, "y": int(rng.integers(1850, 2010)),
            "k": int(rng.integers(2, 40)), "d": DAYS[int(rng.integers(len(DAYS)))]}


def _say(fact: dict, **change) -> str:
    values = {**fact, **change}
    return fact["template"].format(p=values["p"], n=f"{values['n']:,}", y=values["y"], k=values["k"], d=values["d"])


def _claim_at(level: str, fact: dict, other: str, rng: np.random.Generator) -> str:
    """A claim about ``fact`` that its document supports to ``level``: restated (fully), rounded (mostly), with a
    hedge dropped or a figure a little off (partial), far off (minor), or about something the document never says
    (none)."""
    if level == "fully":
        return _say(fact)
    if level == "mostly":  # the figure rounded or nudged, or a small addition the document does not make
        said = _say(fact, n=round(fact["n"], -3) or fact["n"], y=fact["y"] + 1, k=fact["k"] + 1)
        return said if said != _say(fact) else said[:-1] + " and on most holidays."
    if level == "partial":
        return _say(fact, n=fact["n"] + 700, y=fact["y"] + 3, k=fact["k"] + 4)
    if level == "minor":
        return _say(fact, n=fact["n"] * 3, y=fact["y"] - 60, k=fact["k"] * 4, d=DAYS[(DAYS.index(fact["d"]) + 2) % 6])
    return f"{fact['p']} is twinned with {other}, and its mayor is elected every {int(rng.integers(2, 9))} years."


def make_tcva_texts(out: Path, claims: pd.DataFrame, items: pd.DataFrame, rng: np.random.Generator) -> None:
    """Text for the TCVA demo, which the claim labeller shows: each document's source text (eight facts about a
    made-up town), each summary's text and each claim's, written to the verdict the demo already gives it."""
    sources, facts = {}, {}
    for d, place in enumerate(PLACES):
        facts[d] = [_fact(t, place, rng) for t in FACT_TEMPLATES]
        sources[d] = " ".join(_say(f) for f in facts[d])
    texts = []
    for row in claims.itertuples(index=False):
        d = int(row.item_id[3:5])
        fact = facts[d][int(rng.integers(len(FACT_TEMPLATES)))]
        texts.append(_claim_at(str(row.verdict), fact, PLACES[(d + 5) % len(PLACES)], rng))
    claims = claims.assign(claim=texts)[["item_id", "claim_idx", "claim"]]
    by_item = claims.groupby("item_id", sort=False)["claim"].apply(" ".join)
    answers = pd.DataFrame({"item_id": items["item_id"],
                            "input": [f"Summarise what the document says about {PLACES[int(i[3:5])]}." for i in items["item_id"]],
                            "output": [by_item.get(i, f"{PLACES[int(i[3:5])]} is a town.") for i in items["item_id"]],
                            "source": [sources[int(i[3:5])] for i in items["item_id"]]})
    claims.to_csv(out / "tcva_claims.csv", index=False)
    answers.to_csv(out / "tcva_answers.csv", index=False)


PRODUCTS = ["Aurora kettle", "Birch desk lamp", "Cobalt headphones", "Delta e-bike", "Ember heater",
            "Fjord backpack", "Garnet blender", "Harbor router", "Iris thermostat", "Juniper stroller"]
TOPICS = [("warranty", "The {p} has a {n}-year warranty.", "years", (1, 5)),
          ("battery", "The {p} battery lasts about {n} hours on a full charge.", "hours", (4, 40)),
          ("return", "The {p} can be returned within {n} days of delivery.", "days", (14, 60)),
          ("weight", "The {p} weighs {n} kg.", "kg", (1, 25))]


def make_judge(out: Path, rng: np.random.Generator) -> None:
    """100 support answers, human PASS/FAIL labels and two simulated judge runs (rubric v1 and v2)."""
    cases, labels, outputs = [], [], []
    judges = {"v1": {"recall": 0.70, "false_flag": 0.10, "malformed": 0.06},
              "v2": {"recall": 0.85, "false_flag": 0.08, "malformed": 0.02}}
    malformed = ["PASS.", "**FAIL**", "Pass", "Verdict: PASS", "", "FAIL - one claim is unsupported"]
    for i in range(100):
        product = PRODUCTS[i % len(PRODUCTS)]
        topic, sentence, unit, (lo, hi) = TOPICS[int(rng.integers(len(TOPICS)))]
        true_n = int(rng.integers(lo, hi + 1))
        other = TOPICS[(TOPICS.index((topic, sentence, unit, (lo, hi))) + 1) % len(TOPICS)]
        source = (sentence.format(p=product, n=true_n) + " "
                  + other[1].format(p=product, n=int(rng.integers(other[3][0], other[3][1] + 1))))
        fails = rng.random() < 0.3
        stated = true_n if not fails else true_n + int(rng.choice([-1, 1])) * int(rng.integers(1, 4))
        answer = sentence.format(p=product, n=max(stated, 1))
        if fails and rng.random() < 0.4:
            answer += " It also ships with a free spare part."  # a claim the source never makes
        output = {"answer": answer, "topic": topic, "confidence": round(float(rng.uniform(0.4, 1.0)), 2)}
        text = json.dumps(output)
        roll = rng.random()
        if roll < 0.04:
            text = text[:-12]  # a truncated, invalid JSON output
        elif roll < 0.08:
            output["answer"] = answer + " " + "Please let me know if there is anything else I can help with. " * 4
            text = json.dumps(output)
        day = ["mon", "tue", "wed", "thu", "fri"][i % 5]
        case_id = f"case-{i:03d}"
        cases.append({"case_id": case_id, "day": day, "input": f"What is the {topic} of the {product}?",
                      "source": source, "output": text})
        labels.append({"case_id": case_id, "label": "FAIL" if fails else "PASS", "labeller": "demo-annotator",
                       "position": i})
        for version, spec in judges.items():
            says_fail = rng.random() < (spec["recall"] if fails else spec["false_flag"])
            reason = ("The response states a figure the source does not support." if says_fail
                      else "Every claim in the response is stated in the source.")
            raw = ("FAIL" if says_fail else "PASS") + "\n" + reason
            if rng.random() < spec["malformed"]:
                raw = malformed[int(rng.integers(len(malformed)))] + ("\n" + reason if rng.random() < 0.5 else "")
            outputs.append({"case_id": case_id, "rubric": version, "raw": raw})
    with (out / "judge_cases.jsonl").open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(json.dumps(case) + "\n")
    pd.DataFrame(labels).to_csv(out / "judge_labels.csv", index=False)
    with (out / "judge_outputs.jsonl").open("w", encoding="utf-8") as handle:
        for row in outputs:
            handle.write(json.dumps(row) + "\n")


VERSIONS = {"bot-v2": {"fixes": 0.6, "breaks": 0.05}, "bot-v3": {"fixes": 0.3, "breaks": 0.12}}


def make_judge_versions(out: Path, rng: np.random.Generator) -> None:
    """Two later versions of the support bot answer the same 100 questions; the human's label and the judge's reply
    (rubric v1) on each answer. Reads the cases, labels and v1 replies written by ``make_judge``."""
    cases = [json.loads(line) for line in (out / "judge_cases.jsonl").read_text(encoding="utf-8").splitlines()]
    labels = pd.read_csv(out / "judge_labels.csv").set_index("case_id")["label"]
    outputs = {case["case_id"]: case["output"] for case in cases}
    replies = {}  # (case_id, output) -> the judge's reply: the same prompt gets the same reply
    for line in (out / "judge_outputs.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["rubric"] == "v1":
            replies[row["case_id"], outputs[row["case_id"]]] = row["raw"]
    spec = {"recall": 0.70, "false_flag": 0.10, "malformed": 0.06}  # the judge of rubric v1, unchanged
    malformed = ["PASS.", "**FAIL**", "Pass", "Verdict: PASS", "", "FAIL - one claim is unsupported"]
    rows = []
    for version, change in VERSIONS.items():
        for case in cases:
            was_wrong = labels[case["case_id"]] == "FAIL"
            wrong = rng.random() >= change["fixes"] if was_wrong else rng.random() < change["breaks"]
            fact = case["source"].split(". ")[0].rstrip(".") + "."  # the source's first sentence answers the question
            number = int(re.search(r"\d+", fact).group())
            shift = int(rng.choice([-1, 1])) * int(rng.integers(1, 4))
            stated = (number + shift if number + shift >= 1 else number - shift) if wrong else number
            answer = re.sub(r"\d+", str(stated), fact, count=1)
            output = json.dumps({"answer": answer, "topic": case["input"].split()[3],
                                 "confidence": round(float(rng.uniform(0.4, 1.0)), 2)})
            says_fail = rng.random() < (spec["recall"] if wrong else spec["false_flag"])
            reason = ("The response states a figure the source does not support." if says_fail
                      else "Every claim in the response is stated in the source.")
            raw = ("FAIL" if says_fail else "PASS") + "\n" + reason
            if rng.random() < spec["malformed"]:
                raw = malformed[int(rng.integers(len(malformed)))] + ("\n" + reason if rng.random() < 0.5 else "")
            raw = replies.setdefault((case["case_id"], output), raw)
            rows.append({"system": version, "case_id": case["case_id"], "output": output, "label": "FAIL" if wrong else "PASS",
                         "raw": raw})
    with (out / "judge_versions.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


CONDITIONS = ["hypertension", "migraine", "asthma", "insomnia", "osteoarthritis", "depression", "eczema",
              "gout", "psoriasis", "anaemia"]
INTERVENTIONS = ["magnesium", "acupuncture", "vitamin D", "yoga", "probiotics"]
TIERS = {  # share of each length class, base density (facts per token), typical prob_fact
    "systematic_review": {"classes": (0.7, 0.2, 0.1), "density": 0.080, "prob": (8, 2)},
    "trial": {"classes": (0.2, 0.6, 0.2), "density": 0.055, "prob": (6, 3)},
    "general_abstract": {"classes": (0.1, 0.2, 0.7), "density": 0.030, "prob": (3, 4)},
}
LENGTH_CLASSES = ((80, 120, 1.0), (180, 240, 0.7), (380, 460, 0.45))  # token range, filler-driven density factor
FILLER = ["{c} is a common condition that affects many people and their families.",
          "People with {c} often ask whether {i} is worth trying.",
          "Interest in {i} for {c} has grown in recent years, as it has for {o}.",
          "Many readers have written to us about {i} and {c}.",
          "Doctors and patients discuss {c} and its treatment options, including {i} and {j}."]
FACTS = ["In {n} participants, the treatment reduced symptom scores by {x}% compared with placebo (95% CI {lo}-{hi}).",
         "A randomised trial of {i} reported a relative risk of {rr} for relapse after {w} weeks.",
         "A daily dose of {d} mg lowered the {c} severity index by {x} points (p = 0.0{p}).",
         "Across {k} studies, the standardised mean difference was 0.{s}."]


def make_fd(out: Path, rng: np.random.Generator) -> None:
    """600 segments from three evidence tiers, their claims with prob_fact, 50 queries, qrels, embeddings."""
    topics = [(c, i) for c in CONDITIONS for i in INTERVENTIONS]  # 50 topics, one query each
    dim = 48
    topic_vectors = rng.normal(size=(len(topics), dim))
    topic_vectors /= np.linalg.norm(topic_vectors, axis=1, keepdims=True)
    documents, claims, qrels, doc_vectors = [], [], [], []
    tier_names = list(TIERS)
    for d in range(600):
        tier = tier_names[d % 3]
        spec = TIERS[tier]
        t = (d // 3) % len(topics)
        condition, intervention = topics[t]
        lo, hi, factor = LENGTH_CLASSES[int(rng.choice(3, p=spec["classes"]))]
        n_tokens = int(rng.integers(lo, hi + 1))
        expected = n_tokens * spec["density"] * factor * rng.lognormal(0.0, 0.25)
        n_facts = max(1, int(rng.poisson(expected / (spec["prob"][0] / sum(spec["prob"])))))
        n_facts = min(n_facts, max(1, n_tokens // 12))
        sentences = []
        for _ in range(n_facts):
            template = FACTS[int(rng.integers(len(FACTS)))]
            sentence = template.format(n=int(rng.integers(40, 2000)), c=condition, i=intervention,
                                       x=int(rng.integers(5, 40)), lo=int(rng.integers(1, 5)), hi=int(rng.integers(41, 60)),
                                       rr=round(float(rng.uniform(0.5, 0.95)), 2), w=int(rng.integers(4, 52)),
                                       d=int(rng.integers(50, 800)), p=int(rng.integers(1, 5)), k=int(rng.integers(3, 30)),
                                       s=int(rng.integers(10, 80)))
            sentences.append(sentence[0].upper() + sentence[1:])
            claims.append({"doc_id": f"d{d:03d}", "claim": sentences[-1],
                           "prob_fact": round(float(rng.beta(*spec["prob"])), 3)})
        words = sum(len(x.split()) for x in sentences)
        while words < n_tokens:  # pad with filler that repeats the topic words (what BM25 rewards)
            filler = FILLER[int(rng.integers(len(FILLER)))].format(
                c=condition, i=intervention, o=CONDITIONS[int(rng.integers(len(CONDITIONS)))],
                j=INTERVENTIONS[int(rng.integers(len(INTERVENTIONS)))])
            sentences.insert(int(rng.integers(len(sentences) + 1)), filler[0].upper() + filler[1:])
            words += len(filler.split())
        text = " ".join(sentences)
        documents.append({"doc_id": f"d{d:03d}", "source": tier, "topic": f"q{t:02d}", "n_tokens": len(text.split()),
                          "text": text})
        # General abstracts sit closest to the topic in embedding space: broad, on-topic wording.
        closeness = {"general_abstract": 1.5, "trial": 1.2, "systematic_review": 1.0}[tier]
        vector = closeness * topic_vectors[t] + rng.normal(scale=0.12, size=dim)
        doc_vectors.append(vector / np.linalg.norm(vector))
        qrels.append({"query_id": f"q{t:02d}", "doc_id": f"d{d:03d}", "relevance": 1 if tier == "general_abstract" else 2})
    queries = [{"query_id": f"q{t:02d}", "text": f"Does {i} help with {c}?"} for t, (c, i) in enumerate(topics)]
    query_vectors = topic_vectors + rng.normal(scale=0.15, size=topic_vectors.shape)
    query_vectors /= np.linalg.norm(query_vectors, axis=1, keepdims=True)
    # Benchmark claims for the coverage check: 70% restate a corpus claim, 30% are about other topics.
    bench, bench_vectors = [], []
    doc_index = {row["doc_id"]: k for k, row in enumerate(documents)}
    for b in range(200):
        if rng.random() < 0.7:
            source = claims[int(rng.integers(len(claims)))]
            text = "Evidence shows that " + source["claim"][0].lower() + source["claim"][1:]
            vector = np.asarray(doc_vectors[doc_index[source["doc_id"]]]) + rng.normal(scale=0.08, size=dim)
        else:
            text = f"Cold water swimming improves {['memory', 'eyesight', 'hearing', 'balance'][b % 4]} in older adults."
            vector = rng.normal(size=dim)
        bench.append({"claim_id": f"b{b:03d}", "text": text})
        bench_vectors.append(vector / np.linalg.norm(vector))
    pd.DataFrame(documents).to_csv(out / "fd_documents.csv", index=False)
    pd.DataFrame(claims).to_csv(out / "fd_claims.csv", index=False)
    pd.DataFrame(queries).to_csv(out / "fd_queries.csv", index=False)
    pd.DataFrame(qrels).to_csv(out / "fd_qrels.csv", index=False)
    pd.DataFrame(bench).to_csv(out / "fd_benchmark.csv", index=False)
    np.savez_compressed(out / "fd_embeddings.npz", documents=np.asarray(doc_vectors, dtype=np.float32),
                        queries=query_vectors.astype(np.float32), benchmark=np.asarray(bench_vectors, dtype=np.float32))


def make_pairwise(out: Path, rng: np.random.Generator) -> pd.DataFrame:
    """1,600 comparisons of six systems on 800 questions: a human vote and a judge verdict on each."""
    systems = [f"system-{c}" for c in "abcdef"]
    strength = np.array([1.0, 0.6, 0.2, -0.1, -0.5, -0.9])  # log-strengths (natural units)
    # uneven pair counts: pairs of neighbours are compared more often, as a leaderboard's sampling does
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    weight = np.array([1.0 / (j - i) for i, j in pairs])
    rows = []
    for q in range(800):
        difficulty = rng.normal(0.0, 0.6)  # shared by both votes on a question: more ties on hard ones
        for _ in range(2):
            i, j = pairs[int(rng.choice(len(pairs), p=weight / weight.sum()))]
            a, b = (i, j) if rng.random() < 0.5 else (j, i)
            length_a, length_b = (int(rng.integers(40, 400)) for _ in range(2))
            gap = strength[a] - strength[b]
            tie = rng.random() < 0.12 + 0.1 * (difficulty > 0.5)
            human = "tie" if tie else ("a" if rng.random() < 1 / (1 + np.exp(-(gap + 0.1))) else "b")
            # the judge: agrees with the human vote 60% of the time, otherwise votes with a first-slot
            # advantage of 0.8 log-odds and a preference for the longer answer
            if rng.random() < 0.6:
                judge = human
            else:
                logit = gap + 0.8 + 0.7 * np.log2(length_a / length_b)
                judge = "tie" if rng.random() < 0.08 else ("a" if rng.random() < 1 / (1 + np.exp(-logit)) else "b")
            rows.append({"comparison_id": f"c{len(rows):04d}", "question_id": f"q{q:03d}", "system_a": systems[a],
                         "system_b": systems[b], "winner": human, "judge_winner": judge,
                         "length_a": length_a, "length_b": length_b})
    table = pd.DataFrame(rows)
    table.drop(columns="judge_winner").to_csv(out / "pairwise_votes.csv", index=False)
    table[["comparison_id", "judge_winner"]].rename(columns={"judge_winner": "winner"}).to_csv(
        out / "pairwise_judge.csv", index=False)
    return table


TASKS = ["reset a {p} to its factory settings", "descale a {p}", "pair a {p} with a phone", "clean the filter of a {p}",
         "update the firmware of a {p}", "store a {p} over the winter", "fix a {p} that will not turn on",
         "lower the noise of a {p}"]
STEPS = ["Unplug the {p} and wait ten seconds.", "Open the settings menu and choose the maintenance page.",
         "Hold the power button for five seconds until the light blinks.", "Check the manual for the model number first.",
         "Rinse the part under warm water and let it dry.", "Make sure the battery is charged above half.",
         "Restart it and check that the light turns green.", "If this does not help, contact the maker's support line.",
         "Do not use harsh cleaning products on the casing.", "Keep the receipt: the warranty may cover the repair."]


def make_pairwise_texts(out: Path, table: pd.DataFrame, rng: np.random.Generator) -> None:
    """Text for the pairwise demo, which the pairwise labeller shows: a question per question_id and two answers of
    ``length_a`` and ``length_b`` words. The text is of the given length only: it does not carry what decided the
    vote (the systems' strengths)."""
    questions = {}
    for q in table["question_id"].unique():
        product = PRODUCTS[int(rng.integers(len(PRODUCTS)))].split(" ", 1)[1]
        questions[q] = (product, "How do I " + TASKS[int(rng.integers(len(TASKS)))].format(p=product) + "?")

    def answer(product: str, words: int) -> str:
        out_words, step = [], 0
        while len(out_words) < words:  # numbered steps, each of the ten once before any comes again
            for k in rng.permutation(len(STEPS)):
                step += 1
                out_words += f"{step}. {STEPS[k].format(p=product)}".split()
        return " ".join(out_words[:words])

    ids = table["question_id"]
    texts = pd.DataFrame({"comparison_id": table["comparison_id"], "input": [questions[q][1] for q in ids],
                          "output_a": [answer(questions[q][0], n) for q, n in zip(ids, table["length_a"], strict=True)],
                          "output_b": [answer(questions[q][0], n) for q, n in zip(ids, table["length_b"], strict=True)]})
    texts.to_csv(out / "pairwise_texts.csv", index=False)


def main(out: Path = OUT) -> None:
    """Write every demo data set into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    claims, items = make_tcva(out, np.random.default_rng(20261130))
    make_judge(out, np.random.default_rng(20261201))
    make_fd(out, np.random.default_rng(20261202))
    table = make_pairwise(out, np.random.default_rng(20261203))
    make_judge_versions(out, np.random.default_rng(20261204))
    # the texts the labellers show, from generators of their own: every value above stays what it was
    make_tcva_texts(out, claims, items, np.random.default_rng(20261204))
    make_pairwise_texts(out, table, np.random.default_rng(20261205))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
