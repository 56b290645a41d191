"""A conversational-memory set written for lantern: multi-session dialogues, one record per turn.

    python benchmarks/conversations.py            # write benchmarks/conversations/*.jsonl
    python benchmarks/conversations.py --check    # exit 1 if the files differ from the generator

No public conversational benchmark can be fetched where lantern is built (no network but the
package registries), so this one is generated, deterministically, from the templates below
(standard library only). It has the shape of the public ones (LoCoMo and the like):

- ten conversations between two named friends over five sessions each; every turn is a record
  of kind ``observation`` in the scope ``conv:<n>``, its content ``Speaker: text``;
- each conversation tells about 30 facts (a new dog, a trip, a job...), each in one or two
  *evidence* turns, among greetings and small talk, and *distractor* turns that share the fact's
  topic words (the other friend's dog, a trip that did not happen);
- two questions per fact, in natural language with a question mark, each answered by the fact's
  evidence turns, of three types in equal shares:

  - ``lexical``: uses the evidence's distinctive words;
  - ``paraphrase``: asks in other words; apart from the speaker's name it shares at most one
    content word (stemmed, stop words aside) with any evidence turn (checked on generation);
  - ``wordform``: the evidence's words in another form ("adopting" for "adopted").

``turns.jsonl`` holds ``key``, ``conversation``, ``session``, ``kind``, ``scope``, ``content``;
``questions.jsonl`` holds ``id``, ``conversation``, ``scope``, ``question``, ``evidence`` (turn
keys) and ``type``. ``benchmarks/retrieval.py`` searches each question within its scope.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "conversations")
SEED = 22
CONVERSATIONS = 10
SESSIONS = 5
FACTS_PER_CONVERSATION = 30
TYPES = ("lexical", "paraphrase", "wordform")

NAMES = [
    ("Maya", "Jonas"), ("Priya", "Tomas"), ("Elena", "Kwame"), ("Sofia", "Ravi"),
    ("Hannah", "Diego"), ("Aisha", "Lukas"), ("Nora", "Mateo"), ("Ingrid", "Samir"),
    ("Chloe", "Bruno"), ("Yuki", "Oscar"),
]  # fmt: skip

# Each fact: slot values, evidence turns (said by S, the fact's owner; O is the friend), one
# question of each type, and distractor turns (speaker "S" or "O", text). {S} and {O} are names.
FACTS: list[dict] = [
    {
        "slots": {"pet": ["beagle", "terrier", "spaniel"], "petname": ["Biscuit", "Pepper"]},
        "evidence": [
            "We adopted a {pet} puppy from the shelter on Saturday and named him {petname}."
        ],
        "lexical": "What did {S} name the {pet} puppy from the shelter?",
        "paraphrase": "What is the new family dog of {S} called?",
        "wordform": "What name did {S} choose after adopting a puppy?",
        "distractors": [
            ("O", "My cousin wants a puppy too, but her landlord says no dogs."),
            ("S", "The shelter near my office needs volunteers on Saturday mornings."),
        ],
    },
    {
        "slots": {"city": ["Lisbon", "Kyoto", "Vancouver"], "month": ["May", "October"]},
        "evidence": [
            "I booked flights to {city} for {month}, my first trip abroad in years!",
            "{city} was amazing, we walked everywhere and ate so much street food.",
        ],
        "lexical": "Which city did {S} book flights to for {month}?",
        "paraphrase": "Where did {S} travel on holiday overseas?",
        "wordform": "Where was {S} flying for the booking in {month}?",
        "distractors": [
            ("O", "Flights are so expensive this year, I gave up on travelling abroad."),
            ("S", "My boss keeps booking meetings during lunch, it drives me crazy."),
        ],
    },
    {
        "slots": {"company": ["a bakery chain", "a solar startup", "the city library"]},
        "evidence": ["Big news: I accepted a job offer at {company}, I start in three weeks."],
        "lexical": "Where did {S} accept a job offer?",
        "paraphrase": "Which employer is {S} joining?",
        "wordform": "What offer was {S} accepting, and where does the job start?",
        "distractors": [
            ("O", "I had a job interview on Monday but they never called back."),
            ("S", "My neighbour got an offer to buy her house, she is thinking about it."),
        ],
    },
    {
        "slots": {"instrument": ["cello", "piano", "ukulele"]},
        "evidence": [
            "I finally started {instrument} lessons, my teacher says my posture is awful."
        ],
        "lexical": "Which lessons did {S} start?",
        "paraphrase": "What musical instrument is {S} learning to play?",
        "wordform": "What is {S} starting to take lessons in?",
        "distractors": [
            ("O", "My daughter quit her swimming lessons, she says the teacher is too strict."),
            ("S", "I fixed my posture at work with a new chair, my back feels better."),
        ],
    },
    {
        "slots": {
            "distance": ["half marathon", "marathon", "10k race"],
            "place": ["Berlin", "Chicago"],
        },
        "evidence": [
            "I signed up for the {distance} in {place}, training starts next week.",
            "I finished the {distance} in {place}! My legs hurt but I did it.",
        ],
        "lexical": "Which race did {S} sign up for in {place}?",
        "paraphrase": "What long-distance running event did {S} complete?",
        "wordform": "What did {S} finish after signing up and training?",
        "distractors": [
            ("O", "I watched a race on TV last night, the finish was so close."),
            ("S", "Training the new hires at work takes all my energy this week."),
        ],
    },
    {
        "slots": {"dish": ["lasagna", "ramen", "paella"]},
        "evidence": ["I cooked {dish} from scratch for my parents' anniversary dinner."],
        "lexical": "What did {S} cook for the anniversary dinner?",
        "paraphrase": "Which meal did {S} prepare to celebrate mum and dad's wedding date?",
        "wordform": "What was {S} cooking for the parents on the anniversary?",
        "distractors": [
            ("O", "We had dinner at that new place downtown, the food was cold."),
            ("S", "My parents are redoing their kitchen, so no cooking there for a month."),
        ],
    },
    {
        "slots": {"book": ["a mystery novel", "a memoir", "a fantasy series"]},
        "evidence": ["I'm reading {book} my book club picked, I can't put it down."],
        "lexical": "What is {S}'s book club reading?",
        "paraphrase": "What title has {S} been hooked on lately?",
        "wordform": "Which book did {S}'s club pick for readers?",
        "distractors": [
            ("O", "I keep buying books and never reading them, my shelf is full."),
            ("S", "My club at work picked a charity for the winter fundraiser."),
        ],
    },
    {
        "slots": {"sport": ["rock climbing", "kayaking", "archery"]},
        "evidence": ["I tried {sport} for the first time with my coworkers and loved it."],
        "lexical": "What did {S} try for the first time with coworkers?",
        "paraphrase": "Which new outdoor hobby did {S} pick up with colleagues?",
        "wordform": "What activity was {S} trying with the coworkers?",
        "distractors": [
            ("O", "My coworkers dragged me to karaoke, I sang terribly."),
            ("S", "The first time I drove in snow I was terrified."),
        ],
    },
    {
        "slots": {"room": ["kitchen", "bathroom", "attic"]},
        "evidence": ["We are renovating the {room}, the contractor tore out the old floor today."],
        "lexical": "Which room is {S} renovating?",
        "paraphrase": "What part of the house is {S} having rebuilt?",
        "wordform": "What did the renovation by {S}'s contractor start with?",
        "distractors": [
            ("O", "Our contractor disappeared halfway through fixing the roof."),
            ("S", "I mopped the floor three times today because of the rain."),
        ],
    },
    {
        "slots": {"allergy": ["peanuts", "shellfish", "gluten"]},
        "evidence": ["The doctor confirmed I'm allergic to {allergy}, so no more takeaway for me."],
        "lexical": "What did the doctor confirm {S} is allergic to?",
        "paraphrase": "Which food makes {S} ill and must be avoided?",
        "wordform": "What allergy did {S}'s doctor confirm?",
        "distractors": [
            ("O", "My doctor says I should sleep more, as if that were easy."),
            ("S", "The takeaway place on our street closed down."),
        ],
    },
    {
        "slots": {"car": ["an electric car", "a used van", "a vintage motorbike"]},
        "evidence": ["I bought {car} last week, no more waiting for the bus in the rain."],
        "lexical": "What did {S} buy so there's no more waiting for the bus?",
        "paraphrase": "Which vehicle does {S} own now?",
        "wordform": "What was {S} buying to stop taking buses?",
        "distractors": [
            ("O", "The bus drivers are on strike again this week."),
            ("S", "I bought new rain boots, they already leak."),
        ],
    },
    {
        "slots": {"language": ["Japanese", "Portuguese", "Korean"]},
        "evidence": ["I've been studying {language} every morning with an app before work."],
        "lexical": "Which language is {S} studying every morning?",
        "paraphrase": "What foreign tongue is {S} practising daily?",
        "wordform": "What does {S} study with the app before working?",
        "distractors": [
            ("O", "That app keeps sending me notifications every morning."),
            ("S", "My sister speaks three languages, I'm so jealous."),
        ],
    },
    {
        "slots": {"plant": ["tomatoes", "strawberries", "chillies"]},
        "evidence": ["My balcony garden finally gave me ripe {plant}, I planted them in spring."],
        "lexical": "What ripened in {S}'s balcony garden?",
        "paraphrase": "What has {S} been growing at home to eat?",
        "wordform": "What did {S} plant in the gardening season?",
        "distractors": [
            ("O", "My garden is full of weeds, I have no time for it."),
            ("S", "The balcony door is stuck again, the landlord won't fix it."),
        ],
    },
    {
        "slots": {"volunteer": ["a food bank", "an animal rescue", "a literacy program"]},
        "evidence": ["I volunteer at {volunteer} on Sundays now, it keeps me grounded."],
        "lexical": "Where does {S} volunteer on Sundays?",
        "paraphrase": "Which charity does {S} give free time to at the weekend?",
        "wordform": "Where has {S} been volunteering?",
        "distractors": [
            ("O", "Sundays are for sleeping in, I refuse to set an alarm."),
            ("S", "I feel grounded after yoga, you should try it."),
        ],
    },
    {
        "slots": {"move": ["Denver", "Glasgow", "Melbourne"]},
        "evidence": ["We decided to move to {move} next year, closer to my partner's family."],
        "lexical": "Where did {S} decide to move next year?",
        "paraphrase": "Which place will {S} relocate to?",
        "wordform": "Where is {S} moving to be near the partner's family?",
        "distractors": [
            ("O", "My family decided to skip the reunion next year."),
            ("S", "My partner moved the sofa again, I keep walking into it."),
        ],
    },
    {
        "slots": {"baby": ["a baby girl", "a baby boy", "twins"]},
        "evidence": ["My sister just had {baby}, I'm an aunt now!"],
        "lexical": "What did {S}'s sister just have?",
        "paraphrase": "Who was recently born into {S}'s family?",
        "wordform": "What does {S} have as a new aunt's sister's child?",
        "distractors": [
            ("O", "My sister just got back from her honeymoon."),
            ("S", "Our neighbours' baby cries every night at three."),
        ],
    },
    {
        "slots": {"course": ["a pottery class", "a coding bootcamp", "a photography course"]},
        "evidence": ["I enrolled in {course} on Thursday evenings to get out of the house."],
        "lexical": "What did {S} enroll in on Thursday evenings?",
        "paraphrase": "Which weekly class has {S} signed up for?",
        "wordform": "What is {S} enrolling in to get out of the house?",
        "distractors": [
            ("O", "Thursday evenings are my only quiet time at home."),
            ("S", "I need to get out of the house more, I've been hiding."),
        ],
    },
    {
        "slots": {"injury": ["my ankle", "my wrist", "my knee"]},
        "evidence": ["I sprained {injury} playing football, the physio says six weeks of rest."],
        "lexical": "What did {S} sprain playing football?",
        "paraphrase": "What injury is {S} recovering from?",
        "wordform": "What got sprained when {S} was playing?",
        "distractors": [
            ("O", "I watched the football final at the pub, what a game."),
            ("S", "Six weeks until the holidays, I'm counting the days."),
        ],
    },
    {
        "slots": {"band": ["Coldplay", "a jazz trio", "an indie band"]},
        "evidence": ["I saw {band} live at the concert hall, best night of the year."],
        "lexical": "Who did {S} see live at the concert hall?",
        "paraphrase": "Which music performance did {S} attend recently?",
        "wordform": "Who was {S} seeing in the concerts at the hall?",
        "distractors": [
            ("O", "The concert hall is closed for repairs until spring."),
            ("S", "Best night of the year was my birthday, honestly."),
        ],
    },
    {
        "slots": {"project": ["a mobile app", "a podcast", "a short film"]},
        "evidence": ["I'm launching {project} with two friends, we record the first episode soon."],
        "lexical": "What is {S} launching with two friends?",
        "paraphrase": "What side project is {S} starting?",
        "wordform": "What did {S} launch with friends and start recording?",
        "distractors": [
            ("O", "Two friends of mine are launching a cafe, I hope it works."),
            ("S", "I record all my meetings now, otherwise I forget everything."),
        ],
    },
    {
        "slots": {"fear": ["heights", "deep water", "spiders"]},
        "evidence": ["I've always been scared of {fear}, ever since I was a kid."],
        "lexical": "What has {S} always been scared of?",
        "paraphrase": "What phobia does {S} have?",
        "wordform": "What scares {S} since childhood?",
        "distractors": [
            ("O", "My kid is scared of the dark, we bought a night light."),
            ("S", "Ever since the storm our basement smells weird."),
        ],
    },
    {
        "slots": {"gift": ["a handmade quilt", "a telescope", "a record player"]},
        "evidence": ["For my birthday my grandmother gave me {gift}, I almost cried."],
        "lexical": "What did {S}'s grandmother give for the birthday?",
        "paraphrase": "What present did {S} receive from a grandparent?",
        "wordform": "What was {S} given by grandma on turning a year older?",
        "distractors": [
            ("O", "My grandmother turns ninety next month, we're planning a party."),
            ("S", "I almost cried at that movie last night, so embarrassing."),
        ],
    },
    {
        "slots": {"diet": ["vegetarian", "vegan", "dairy free"]},
        "evidence": ["I went {diet} in January and honestly I feel more energetic."],
        "lexical": "What did {S} go in January?",
        "paraphrase": "How has {S} changed eating habits this year?",
        "wordform": "What diet has {S} been going on since January?",
        "distractors": [
            ("O", "January was so cold, I barely left the flat."),
            ("S", "I feel more energetic when I sleep before eleven."),
        ],
    },
    {
        "slots": {"exam": ["the bar exam", "the nursing board exam", "the driving test"]},
        "evidence": ["I passed {exam} on my second try, I'm so relieved."],
        "lexical": "Which exam did {S} pass on the second try?",
        "paraphrase": "What qualification did {S} earn after failing once?",
        "wordform": "What was {S} passing after trying twice?",
        "distractors": [
            ("O", "My brother failed his exam, he has to retake it in June."),
            ("S", "I'm relieved the rain stopped before the picnic."),
        ],
    },
    {
        "slots": {"craft": ["knitting", "woodworking", "painting watercolors"]},
        "evidence": ["I've taken up {craft} to relax in the evenings, it helps with stress."],
        "lexical": "What has {S} taken up to relax in the evenings?",
        "paraphrase": "What hobby does {S} use to unwind after work?",
        "wordform": "What does {S} do for relaxing when stressed?",
        "distractors": [
            ("O", "Stress at work is terrible, we have a deadline every week."),
            ("S", "Evenings are when I call my mum, usually."),
        ],
    },
    {
        "slots": {"wedding": ["Tuscany", "a barn in Vermont", "the beach in Bali"]},
        "evidence": ["We're getting married in {wedding} next summer, the venue is booked."],
        "lexical": "Where is {S} getting married next summer?",
        "paraphrase": "Where will {S}'s wedding take place?",
        "wordform": "Where will {S} marry, with the venue booking done?",
        "distractors": [
            ("O", "My friends got married last summer and it rained all day."),
            ("S", "I booked the venue for our team party, finally."),
        ],
    },
    {
        "slots": {"game": ["chess", "a fantasy board game", "online poker"]},
        "evidence": ["I joined a {game} club that meets at the cafe every Wednesday."],
        "lexical": "What club did {S} join at the cafe?",
        "paraphrase": "Which weekly game group does {S} belong to?",
        "wordform": "What is {S} joining on Wednesdays?",
        "distractors": [
            ("O", "That cafe on the corner has the best cinnamon rolls."),
            ("S", "Wednesday is recycling day, I always forget."),
        ],
    },
    {
        "slots": {"grandad": ["grandfather", "uncle", "godfather"]},
        "evidence": ["My {grandad} passed away last month, it has been a hard few weeks."],
        "lexical": "Who passed away last month in {S}'s family?",
        "paraphrase": "Which relative did {S} lose recently?",
        "wordform": "Whose passing made the last weeks hard for {S}?",
        "distractors": [
            ("O", "Last month was hard for me too, work was brutal."),
            ("S", "The month passed so fast, I can't believe it's already spring."),
        ],
    },
    {
        "slots": {"bike": ["from home to the office", "along the coast", "across the Alps"]},
        "evidence": ["I cycled {bike} on my new bike, eighty kilometres in one day."],
        "lexical": "Where did {S} cycle on the new bike?",
        "paraphrase": "What long ride did {S} complete?",
        "wordform": "Where was {S} cycling the eighty kilometres?",
        "distractors": [
            ("O", "Someone stole my bike from outside the station."),
            ("S", "The new office is eighty minutes away by train."),
        ],
    },
    {
        "slots": {"promo": ["team lead", "senior designer", "head chef"]},
        "evidence": ["I got promoted to {promo}, the raise is small but the title feels good."],
        "lexical": "What was {S} promoted to?",
        "paraphrase": "What is {S}'s new role at work after moving up?",
        "wordform": "What promotion did {S} get, and how is the raise?",
        "distractors": [
            ("O", "My team lead quit, nobody knows who replaces her."),
            ("S", "The raise in rent this year is ridiculous."),
        ],
    },
]

GREETINGS = [
    "Hey {O}! It's been a while, how are you?",
    "Hi {O}, long time no talk, what's new?",
    "Good to hear from you {O}, how was your week?",
    "Hey, I was just thinking about you, how's everything?",
]
REPLIES = [
    "Hi {O}! I'm good, busy but good. You?",
    "Hey! Doing well, thanks for asking.",
    "Not bad at all, the week flew by.",
    "All good here, just tired from work.",
]
SMALL_TALK = [
    "That sounds amazing, I'm so happy for you!",
    "Haha, I know exactly what you mean.",
    "Wow, tell me more about that.",
    "Oh no, I'm sorry to hear that.",
    "That's great news, congratulations!",
    "I've been so busy lately with everything going on.",
    "The weather has been awful here, rain every day.",
    "Honestly I just want a quiet weekend at home.",
    "I can't believe how fast this year is going.",
    "You always have the best stories.",
    "Work has been crazy, but I'm managing.",
    "We should meet up soon, it's been too long.",
    "I'm proud of you, seriously.",
    "That must have been a lot to deal with.",
    "I love that for you!",
    "Let me know how it goes, okay?",
]
GOODBYES = [
    "I have to run, talk soon!",
    "Take care {O}, catch up next week.",
    "Bye for now, say hi to everyone.",
]

# The question and function words no search needs, for the paraphrase check (as recall.py).
_STOP_WORDS = """
    a about after again all am an and any are as at be been being but by can could did do
    does doing done for from had has have having he her here his how i if in into is it its
    just me my no not now of on or our out over she so some such than that the their them then
    there these they this those to too up us very was we were what when where which while who
    whom whose why will with would you your also still yet may might must s t"""
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def _stem(word: str) -> str:
    """A crude suffix stripper (standard library only): enough to see "adopted" in "adopt"."""
    for suffix in ("ing", "ed", "es", "s", "er", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _content_words(text: str) -> set[str]:
    words = set()
    for word in _WORD.findall(text.lower()):
        word = word.removesuffix("'s")
        if word not in _STOP:
            words.add(_stem(word))
    return words


def generate(seed: int = SEED) -> tuple[list[dict], list[dict]]:
    """(turns, questions): the whole set, the same for the same seed."""
    turns: list[dict] = []
    questions: list[dict] = []
    for number in range(CONVERSATIONS):
        rng = random.Random(seed * 1000 + number)
        first, second = NAMES[number]
        scope = f"conv:{number + 1:02d}"
        facts = rng.sample(range(len(FACTS)), min(FACTS_PER_CONVERSATION, len(FACTS)))
        # sessions[s] is a list of (speaker, text, evidence tag or None)
        sessions: list[list[tuple[str, str, tuple[int, int] | None]]] = [
            [] for _ in range(SESSIONS)
        ]
        asked = []
        for order, index in enumerate(facts):
            fact = FACTS[index]
            owner, friend = (first, second) if rng.random() < 0.5 else (second, first)
            values = {slot: rng.choice(options) for slot, options in fact["slots"].items()}
            values.update(S=owner, O=friend)
            evidence = fact["evidence"]
            start = rng.randrange(SESSIONS - len(evidence) + 1)
            for step, text in enumerate(evidence):
                session = start + step
                sessions[session].append((owner, text.format(**values), (order, step)))
                # the friend answers
                sessions[session].append((friend, rng.choice(SMALL_TALK).format(**values), None))
            for who, text in fact["distractors"]:
                speaker = owner if who == "S" else friend
                sessions[rng.randrange(SESSIONS)].append((speaker, text.format(**values), None))
            kinds = (TYPES[order % 3], TYPES[(order + 1) % 3])
            asked.append((order, values, fact, kinds, len(evidence)))
        keys: dict[tuple[int, int], str] = {}
        for session_number, lines in enumerate(sessions):
            rng.shuffle(lines)
            speakers = (first, second) if session_number % 2 == 0 else (second, first)
            opening = [
                (speakers[0], rng.choice(GREETINGS), None),
                (speakers[1], rng.choice(REPLIES), None),
            ]
            closing = [(speakers[0], rng.choice(GOODBYES), None)]
            for speaker, text, tag in opening + lines + closing:
                other = second if speaker == first else first
                key = f"c{number + 1:02d}-s{session_number + 1}-t{len(turns):05d}"
                if tag is not None:
                    keys[tag] = key
                content = f"{speaker}: {text.format(O=other)}"
                turns.append(
                    {
                        "key": key,
                        "conversation": number + 1,
                        "session": session_number + 1,
                        "kind": "observation",
                        "scope": scope,
                        "content": content,
                    }
                )
        for order, values, fact, kinds, count in asked:
            for kind in kinds:
                questions.append(
                    {
                        "id": f"c{number + 1:02d}-q{len(questions):04d}",
                        "conversation": number + 1,
                        "scope": scope,
                        "question": fact[kind].format(**values),
                        "evidence": [keys[(order, step)] for step in range(count)],
                        "type": kind,
                    }
                )
    return turns, questions


def check(turns: list[dict], questions: list[dict]) -> list[str]:
    """Paraphrases that share more than one content word (the speaker's name aside) with an
    evidence turn, and evidence keys that name no turn."""
    by_key = {t["key"]: t for t in turns}
    problems = []
    for q in questions:
        for key in q["evidence"]:
            if key not in by_key:
                problems.append(f"{q['id']}: unknown evidence {key}")
            elif q["type"] == "paraphrase":
                speaker, _, text = by_key[key]["content"].partition(": ")
                shared = _content_words(q["question"]) & _content_words(text)
                shared.discard(speaker.lower())
                if len(shared) > 1:
                    problems.append(f"{q['id']}: shares {sorted(shared)}: {q['question']!r}")
    return problems


def _lines(items: list[dict]) -> str:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the files, write none")
    args = parser.parse_args(argv)
    turns, questions = generate()
    problems = check(turns, questions)
    for problem in problems:
        print(f"set problem: {problem}", file=sys.stderr)
    files = {"turns.jsonl": _lines(turns), "questions.jsonl": _lines(questions)}
    if args.check:
        stale = []
        for name, text in files.items():
            try:
                with open(os.path.join(OUT, name), encoding="utf-8") as handle:
                    if handle.read() != text:
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
        for name in stale:
            print(f"{name} differs from the generator: run benchmarks/conversations.py")
        return 1 if stale or problems else 0
    os.makedirs(OUT, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    counts = {t: sum(1 for q in questions if q["type"] == t) for t in TYPES}
    print(f"{len(turns)} turns, {len(questions)} questions {counts} in {OUT}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
