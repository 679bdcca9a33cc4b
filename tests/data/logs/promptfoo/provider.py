"""The system under test for the promptfoo fixture: canned answers by question and repeat, no network."""

ANSWERS = {  # the answer's kind in repeats 1 and 2 (see make_promptfoo.sh)
    "France": ("correct", "verbose"), "Italy": ("correct", "hedged"), "Japan": ("extra", "correct"),
    "Canada": ("wrong", "wrong"), "Australia": ("wrong", "correct"), "Kenya": ("verbose", "verbose"),
    "Peru": ("hedged", "extra"), "Norway": ("correct", "error"), "Egypt": ("correct", "correct"),
    "Chile": ("extra", "hedged"),
}
CITIES = {"France": ("Paris", "Lyon"), "Italy": ("Rome", "Milan"), "Japan": ("Tokyo", "Osaka"),
          "Canada": ("Ottawa", "Toronto"), "Australia": ("Canberra", "Sydney"), "Kenya": ("Nairobi", "Mombasa"),
          "Peru": ("Lima", "Cusco"), "Norway": ("Oslo", "Bergen"), "Egypt": ("Cairo", "Alexandria"),
          "Chile": ("Santiago", "Valparaiso")}


def call_api(prompt, options, context):
    country = context["vars"]["country"]
    kind = ANSWERS[country][context.get("repeatIndex", 0)]
    capital, wrong = CITIES[country]
    if kind == "error":
        return {"error": "simulated provider outage"}
    text = {"correct": capital, "verbose": f"The capital of {country} is {capital}.",
            "hedged": f"It might be {capital}, or possibly {wrong}.",
            "extra": f"{capital}, which is also the largest port in {country}.", "wrong": wrong}[kind]
    return {"output": text}
