"""What a write's `similar` calls a candidate (issue 42 item 2): the rule of `search.relations`,
without the model (cosines given)."""

from synapse.search import relations
from synapse.search.relations import Candidate


def test_a_key_an_agent_chose_that_shares_a_word_makes_a_weak_cosine_related() -> None:
    # Given an older coffee preference only 0.29 alike in meaning, under a key sharing a word
    older = Candidate("mem_a", "coffee", "Drinks his coffee black, no sugar", 0.29)
    # When the newer one is labelled
    labels = relations.labelled("coffee_order", "Switched to oat milk flat whites", [older], 3)
    # Then the older is named as related
    assert labels == [
        {
            "id": "mem_a",
            "key": "coffee",
            "similarity": 0.29,
            "relation": "related",
            "content": "Drinks his coffee black, no sugar",
        }
    ]


def test_a_derived_key_shares_nothing_and_function_words_do_not_count() -> None:
    # Given keys derived from content (MCP remember) and only update words in common
    older = Candidate("mem_a", "now_changed_things_a1b2c3d4", "Now changed things", 0.3)
    labels = relations.labelled("changed_now_again_0f9e8d7c", "Changed it now again", [older], 3)
    assert labels == []


def test_only_the_best_related_is_named_and_near_identical_is_a_repeat() -> None:
    same = Candidate("mem_same", "home", "Lives in Berlin", 0.95)
    older = Candidate("mem_old", "home_city", "Lives in Berlin Mitte", 0.6)
    other = Candidate("mem_other", "city_trip", "Visited Berlin in May", 0.55)
    labels = relations.labelled("home_city_now", "Lives in Berlin", [same, older, other], 3)
    assert [(s["id"], s["relation"]) for s in labels] == [("mem_same", "repeat"), ("mem_old", "related")]


def test_a_named_memory_is_quoted_and_a_long_one_clipped() -> None:
    # Given an older memory of the subject, and one far longer than a note can quote
    older = Candidate("mem_old", "home_city", "Lives in Berlin Mitte", 0.6)
    long = Candidate("mem_long", "home", "Lives in Berlin " + "and more " * 40, 0.95)
    # When a write names them
    labels = relations.labelled("home_city_now", "Lives in Berlin", [older, long], 3)
    # Then each carries its words for the agent to judge, a long one clipped
    quoted = {s["id"]: s["content"] for s in labels}
    assert quoted["mem_old"] == "Lives in Berlin Mitte"
    assert len(quoted["mem_long"]) == relations.SHOWN_CHARS and quoted["mem_long"].endswith("…")


def test_stems_join_running_and_runs() -> None:
    assert relations.subject_words("running") == relations.subject_words("runs") == frozenset({"run"})


def test_the_search_score_is_the_write_time_score() -> None:
    # Given a write and a candidate
    older = Candidate("mem_a", "coffee", "Drinks his coffee black, no sugar", 0.29)
    # Then scoring their subjects pairwise (as search does) gives what labelling a write gives
    pair = relations.pair_score(
        relations.subject_of("coffee_order", "Switched to oat milk flat whites"),
        relations.subject_of(older.key, older.content),
        older.similarity,
    )
    assert pair == relations.score("coffee_order", "Switched to oat milk flat whites", older) > 0.29


def test_a_memory_that_says_every_word_of_a_named_key_is_about_that_key() -> None:
    # Given a deadline under the key an agent chose, and an update in other words naming the key whole
    deadline = relations.subject_of("atlas_deadline", "Project Atlas is due on June 30")
    pushed = relations.subject_of("atlas_deadline_a1b2c3", "Atlas deadline pushed back to August 15")
    lead = relations.subject_of("atlas_lead", "Maria leads Project Atlas")
    # Then the key counts for the update as it does for another key sharing a word with it
    assert relations.pair_score(pushed, deadline, 0.5) == relations.pair_score(lead, deadline, 0.5)
    assert relations.pair_score(pushed, deadline, 0.5) >= 0.5 + relations.KEY_WEIGHT
    # And a key of one word said in passing is a shared word, not the subject
    coffee = relations.subject_of("coffee", "Drinks his coffee black, no sugar")
    yoga = relations.subject_of(
        "changed_morning_routine_yoga_4f2a9c", "Changed his morning routine to yoga before coffee"
    )
    assert relations.pair_score(yoga, coffee, 0.5) == 0.5 + relations.WORD_WEIGHT / 2


def test_a_move_lends_the_words_of_where_one_lives_and_names_the_address_it_replaces() -> None:
    # Given an address under the key an agent chose, and a later move that shares no word with it
    address = Candidate("mem_a", "home_address", "Lives at 14 Elm Street, Portland", 0.41)
    # When the move is labelled
    labels = relations.labelled(
        "moved_harbour_3f9a2c", "Moved to 22 Harbour Road, Seattle last month", [address], 3
    )
    # Then the address is named as what it may replace
    assert [(s["id"], s["relation"]) for s in labels] == [("mem_a", "related")]
    # And a move of something else lends nothing ("moved up" a school year)
    assert relations.subject_of("x_3f9a2c", "Maya moved up to year 4").words == frozenset({"maya"})


def test_a_value_held_from_a_moment_or_set_by_an_event_says_it_is_new() -> None:
    # Given newer values with no change word, said by when they hold from or by what set them
    for newer in [
        "Registered with Manor Park Surgery since October",
        "From next sprint stand-up is 10:00",
        "Started at NHS England's analytics unit on 3 November",
        "Joined Cragtop Bouldering in Hunslet",
        "Bought a secondhand Kia e-Niro",
    ]:
        # Then each says it is a new value
        assert relations.says_update(newer), newer
    # But a plan starting, or a hire, is no new value of anything
    assert not relations.says_update("She's starting a peer support group for trans youth in July")
    assert not relations.says_update("We hired a therapist who used to run a support group")
