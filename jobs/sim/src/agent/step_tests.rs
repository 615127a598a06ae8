//! One agent turn against a scripted model: every kind of action, the
//! plan's quotas, retries, de-duplication, knowledge and reflection.

use super::*;
use crate::Memory;
use crate::agent::memory::{Held, Recall, Remembers};
use crate::agent::test_model::{self, Scripted};
use some_jobs::chat::Message;

/// The memory after the step: what the coordinator holds once it applied
/// the step's changes.
fn after(memory: &Memory, step: &Step) -> Memory {
    let mut m = memory.clone();
    step.remembered.iter().for_each(|c| m.apply(c));
    m
}

/// Sarah with a shorter history and other preferences, which the turn's
/// expected prompts quote.
fn sarah() -> Persona {
    let mut p = test_model::sarah();
    p.description = "a volunteer who runs".into();
    let profile = p.profile.as_mut().expect("an enriched persona");
    profile.history = "Sarah volunteers at the animal shelter. She runs marathons for charity.".into();
    profile.preferences = "She shares rescue dog stories. She likes running gear reviews.".into();
    p
}

fn plan(like: u32) -> Plan {
    Plan::parse(&format!(
        "Browsing time: 20:00-21:00\nPosting days: Monday\nPosting time: 19:00-20:00\nLike probability: {like}%\nReblog probability: 50%\nComment probability: 50%\nPosts per week: 1"
    ))
    .unwrap()
}

fn feed() -> Vec<FeedPost> {
    let long = format!(
        "Adopted a shelter dog today and the first week of training went well. {}",
        "We practised sit and stay every evening. ".repeat(8)
    );
    vec![
        FeedPost { id: PostId(10), author: AgentId(5), content: long },
        FeedPost { id: PostId(11), author: AgentId(6), content: "New running shoes review.".into() },
    ]
}

fn store() -> PassageStore {
    PassageStore::new(vec![
        ("Matterhorn".into(), "The Matterhorn is a mountain of the Alps.".into()),
        ("Clicker training".into(), "Clicker training is a dog training method based on positive reinforcement and dog behavior.".into()),
    ])
}

#[test]
fn a_turn_browses_reacts_posts_and_reflects_in_sequence() {
    let model = Scripted::new([
        "Like: yes\nReblog: yes\nComment: Great progress!",
        "I am not sure.",
        "Like: yes\nReblog: yes\nComment: Nice shoes",
        "1. Dog training tips\n2. Marathon week",
        "Clicker training builds trust with a rescue dog.",
        "Clicker training works wonders: mark the moment, reward fast, and your rescue dog learns to trust you.",
        "A new owner reports a good first week training an adopted shelter dog.",
        "I would follow user 5.",
    ]);
    let (persona, plan, store, settings) = (sarah(), plan(100), store(), StepSettings::default());
    let mut memory = Memory::default();
    memory.remember_post("Clicker training builds trust with a rescue dog.".into());
    let feed = feed();
    let input = StepInput { persona: &persona, plan: &plan, memory: &Recall::from(&memory), turn: Turn(48), feed: &feed, posts: 1 };
    let ctx = StepContext { model: &model, relevance: Relevance::TfIdf, knowledge: Some(&store), settings: &settings };
    let step = futures::executor::block_on(agent_step(input, ctx)).unwrap();

    let kinds: Vec<(u32, ActionKind)> = step.actions.iter().map(|a| (a.seq, a.action.kind())).collect();
    assert_eq!(
        kinds,
        [
            (0, ActionKind::Browse),
            (1, ActionKind::Like),
            (2, ActionKind::Reblog),
            (3, ActionKind::Comment),
            (4, ActionKind::Like),
            (5, ActionKind::Post),
            (6, ActionKind::Follow)
        ]
    );
    assert!(step.actions.iter().all(|a| a.agent == AgentId(3)));
    assert_eq!(step.actions[3].action, Action::Comment { post: PostId(10), text: "Great progress!".into() });
    assert_eq!(
        step.actions[4].action,
        Action::Like { post: PostId(11) },
        "the reblog and comment quotas (1 of 2) were spent on the first post"
    );
    assert_eq!(step.actions[6].action, Action::Follow { agent: AgentId(5) });
    assert_eq!(step.posts, [PostNote { seq: 5, topic: "Dog training tips".into(), knowledge: vec![1] }]);
    assert!(step.failures.is_empty(), "{:?}", step.failures);
    assert_eq!((step.calls, step.usage.prompt_tokens, model.left()), (8, 80, 0));

    let sent: Vec<String> = model.requests().iter().map(|r| r.messages[0].content.clone()).collect();
    assert!(sent[0].contains("Post by user 5:\nAdopted a shelter dog"));
    assert!(
        sent[0].contains("Detailed historical behaviour information: Sarah volunteers at the animal shelter."),
        "dynamic persona: {}",
        sent[0]
    );
    assert!(!sent[0].contains("She runs marathons"), "only the most relevant history item");
    assert!(sent[3].contains("Suggest 1 topics"));
    assert!(
        sent[4].contains("Topic: Dog training tips\n") && sent[4].contains("Clicker training: Clicker training is a dog training method")
    );
    assert!(!sent[4].contains("Matterhorn"), "the boundary keeps knowledge the persona should not have out");
    assert!(
        sent[7].contains("1. A post by user 5 says: A new owner reports")
            && sent[7].contains("2. A post by user 6 says: New running shoes review. What you did: you liked it.")
    );

    let requests = model.requests();
    assert_eq!(requests[2].messages[1], Message::assistant("I am not sure."), "the retry shows the reply that failed");
    assert!(
        requests[2].messages[2].content.starts_with("Your reply could not be used: decision reply cannot be read:"),
        "{:?}",
        requests[2].messages[2]
    );
    let follow = requests[7].response_format.as_ref().expect("reflection asks for its schema");
    assert_eq!((follow.name.as_str(), &follow.value()["properties"]["follow"]["items"]["enum"]), ("follow", &serde_json::json!([5, 6])));
    let decision = |i: usize| requests[i].response_format.as_ref().map(|f| f.name.as_str());
    assert_eq!(
        (decision(0), decision(1), decision(2)),
        (Some("decision"), Some("decision"), Some("decision")),
        "every decision asks for its schema"
    );
    assert!(requests[3..7].iter().all(|r| r.response_format.is_none()), "topics and posts are free text");

    let m = &after(&memory, &step);
    assert_eq!(m.short_term.len(), 2);
    assert!(m.short_term[0].summarised && m.short_term[0].actions == [ActionKind::Like, ActionKind::Reblog, ActionKind::Comment]);
    assert_eq!((m.own_posts.len(), m.knowledge.iter().copied().collect::<Vec<_>>(), m.last_reflection), (2, vec![1], Some(Turn(48))));
    assert_eq!(m.summaries[0], "Day 2: looked back at 2 posts and chose to follow user 5.");
}

#[test]
fn unreadable_replies_are_recorded_and_the_turn_goes_on() {
    let model = Scripted::new(["hmm", "still hmm", "Like: no\nReblog: no\nComment: none", "no list", "nope"]);
    let (persona, plan, settings) = (sarah(), plan(100), StepSettings::default());
    let memory = Memory::default();
    let feed = feed();
    let input = StepInput { persona: &persona, plan: &plan, memory: &Recall::from(&memory), turn: Turn(5), feed: &feed, posts: 1 };
    let ctx = StepContext { model: &model, relevance: Relevance::TfIdf, knowledge: None, settings: &settings };
    let step = futures::executor::block_on(agent_step(input, ctx)).unwrap();
    assert_eq!(step.actions.len(), 1, "only the browse: {:?}", step.actions);
    let failures: Vec<(ActionKind, Option<PostId>, &str)> = step.failures.iter().map(|f| (f.action, f.post, f.cause.as_str())).collect();
    assert_eq!(
        failures,
        [
            (ActionKind::Browse, Some(PostId(10)), "decision reply cannot be read: it says nothing about like, reblog or comment"),
            (ActionKind::Post, None, "topics reply cannot be read: no numbered or bulleted topic"),
        ]
    );
    let m = after(&memory, &step);
    assert_eq!(m.short_term.len(), 2, "both posts are remembered as browsed");
    assert_eq!(m.last_reflection, None, "not due before two days");
}

#[test]
fn a_model_error_fails_the_whole_step_and_nothing_is_returned() {
    let model = Scripted::new(["Like: yes\nReblog: no\nComment: none"]);
    let (persona, plan, settings) = (sarah(), plan(100), StepSettings::default());
    let memory = Memory::default();
    let feed = feed();
    let input = StepInput { persona: &persona, plan: &plan, memory: &Recall::from(&memory), turn: Turn(5), feed: &feed, posts: 0 };
    let ctx = StepContext { model: &model, relevance: Relevance::TfIdf, knowledge: None, settings: &settings };
    let err = futures::executor::block_on(agent_step(input, ctx)).unwrap_err();
    assert_eq!(err.to_string(), "model endpoint scripted: the script has ended");
}

#[test]
fn a_post_that_repeats_twice_is_dropped_as_a_failure() {
    let model = Scripted::new(["1. Rescue dogs", "Rescue dogs need patience and love.", "Rescue dogs need patience and love!"]);
    let (persona, plan, settings) = (sarah(), plan(0), StepSettings { reflection: false, ..Default::default() });
    let mut memory = Memory::default();
    memory.remember_post("Rescue dogs need patience and love.".into());
    let input = StepInput { persona: &persona, plan: &plan, memory: &Recall::from(&memory), turn: Turn(19), feed: &[], posts: 1 };
    let ctx = StepContext { model: &model, relevance: Relevance::TfIdf, knowledge: None, settings: &settings };
    let step = futures::executor::block_on(agent_step(input, ctx)).unwrap();
    assert!(step.actions.is_empty());
    assert_eq!(step.failures.len(), 1);
    assert!(
        step.failures[0].cause.starts_with("the post on \"Rescue dogs\" repeats an earlier post twice (TF-IDF similarity 1.000)"),
        "{:?}",
        step.failures
    );
}

#[test]
fn the_step_future_can_run_on_a_multithreaded_runtime() {
    fn assert_send<T: Send>(_: &T) {}
    let model = Scripted::new(Vec::<String>::new());
    let (persona, plan, settings, memory) = (sarah(), plan(0), StepSettings::default(), Memory::default());
    let input = StepInput { persona: &persona, plan: &plan, memory: &Recall::from(&memory), turn: Turn(1), feed: &[], posts: 0 };
    let ctx = StepContext { model: &model, relevance: Relevance::TfIdf, knowledge: None, settings: &settings };
    let fut = agent_step(input, ctx);
    assert_send(&fut);
    let step = futures::executor::block_on(fut).unwrap();
    assert_eq!((step.actions.len(), step.calls), (0, 0));
}

#[test]
fn a_batched_turn_decides_the_whole_feed_in_one_call_within_the_quotas() {
    let model = Scripted::new(["1: like, reblog, comment: Good dog!\n2: like, reblog, comment: Nice shoes"]);
    let (persona, plan) = (sarah(), plan(100));
    let settings = StepSettings { browse: BrowseMode::Batched, reflection: false, ..Default::default() };
    let memory = Memory::default();
    let feed = feed();
    let input = StepInput { persona: &persona, plan: &plan, memory: &Recall::from(&memory), turn: Turn(20), feed: &feed, posts: 0 };
    let ctx = StepContext { model: &model, relevance: Relevance::TfIdf, knowledge: None, settings: &settings };
    let step = futures::executor::block_on(agent_step(input, ctx)).unwrap();
    let kinds: Vec<(ActionKind, Option<u64>)> = step
        .actions
        .iter()
        .map(|a| {
            let post = match &a.action {
                Action::Like { post } | Action::Reblog { post } | Action::Comment { post, .. } => Some(post.0),
                _ => None,
            };
            (a.action.kind(), post)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (ActionKind::Browse, None),
            (ActionKind::Like, Some(10)),
            (ActionKind::Reblog, Some(10)),
            (ActionKind::Comment, Some(10)),
            (ActionKind::Like, Some(11))
        ]
    );
    assert_eq!(step.calls, 1);
    assert!(model.requests()[0].messages[0].content.contains("you like at most 2, reblog at most 1 and comment on at most 1"));
}

/// The second week's posting turn must not ask what the first asked: a
/// deterministic model would suggest the same topics and the duplicate
/// check would refuse every post (a second week without posts).
#[test]
fn a_later_posting_turn_asks_with_the_agents_recent_posts_and_its_own_seed() {
    let (persona, plan) = (sarah(), plan(0));
    let settings = StepSettings { seed: Some(7), reflection: false, ..StepSettings::default() };
    let ask = |memory: &Memory, turn: Turn| {
        // A second try after a duplicate gets a new text.
        let model = Scripted::new(["1. Dog training tips", "Clicker training builds trust with a rescue dog.", "Marathon week done."]);
        let input = StepInput { persona: &persona, plan: &plan, memory: &Recall::from(memory), turn, feed: &[], posts: 1 };
        let ctx = StepContext { model: &model, relevance: Relevance::TfIdf, knowledge: None, settings: &settings };
        let step = futures::executor::block_on(agent_step(input, ctx)).unwrap();
        (model.requests(), after(memory, &step))
    };
    let (first, memory) = ask(&Memory::default(), Turn(19));
    let (second, _) = ask(&memory, Turn(19 + 168));
    let topics = |r: &[some_jobs::chat::ChatRequest]| r[0].messages[0].content.clone();
    assert!(topics(&first).contains("What you posted recently:\n(nothing yet)"), "{}", topics(&first));
    assert!(topics(&second).contains("- Clicker training builds trust with a rescue dog."), "{}", topics(&second));
    assert_ne!(first[0].seed, second[0].seed, "each turn samples with its own seed");
    assert_eq!(first[0].seed, ask(&Memory::default(), Turn(19)).0[0].seed, "and a replay with the same one");
}

#[test]
fn a_reflection_sent_only_its_entries_reads_what_the_whole_memory_would_hold() {
    // 199 entries held: two engaged at the front, one in the middle. The
    // two posts read this turn push the oldest out of the 200 kept, so the
    // reflection looks back at the other two only.
    let mut memory = Memory::default();
    for i in 0..199u32 {
        let actions = if matches!(i, 0 | 1 | 150) { vec![ActionKind::Like] } else { Vec::new() };
        let text = format!("Entry number {i} about dogs.");
        memory.remember(Entry {
            turn: Turn(10),
            post: PostId(1000 + u64::from(i)),
            author: AgentId(7),
            text,
            summarised: false,
            actions,
            comment: None,
        });
    }
    let no = "Like: no\nReblog: no\nComment: none";
    let model = Scripted::new([no, no, "I would follow user 7."]);
    let (persona, plan, settings, feed) = (sarah(), plan(0), StepSettings::default(), feed());
    let text_of = |p: PostId| memory.short_term.iter().find(|e| e.post == p).map(|e| e.text.as_str());
    let recall = Held::from(&memory).for_step(false, true, text_of, Default::default);
    assert_eq!((recall.read, recall.engaged.len(), recall.own_posts.len()), (199, 3, 0), "only the engaged entries travel");
    let input = StepInput { persona: &persona, plan: &plan, memory: &recall, turn: Turn(48), feed: &feed, posts: 0 };
    let ctx = StepContext { model: &model, relevance: Relevance::TfIdf, knowledge: None, settings: &settings };
    let step = futures::executor::block_on(agent_step(input, ctx)).unwrap();
    let prompt = &model.requests()[2].messages[0].content;
    assert!(prompt.contains("Entry number 1 about") && prompt.contains("Entry number 150 about"), "{prompt}");
    assert!(!prompt.contains("Entry number 0 about"), "the entry the reads pushed out is not looked back at");
    let m = after(&memory, &step);
    assert_eq!((m.short_term.len(), m.short_term[0].post, m.last_reflection), (200, PostId(1001), Some(Turn(48))));
    assert_eq!(m.summaries.back().map(String::as_str), Some("Day 2: looked back at 2 posts and chose to follow user 7."));
    let stored = serde_json::to_string(&step.remembered).unwrap();
    let mut replayed = memory.clone();
    replayed.absorb(&stored).unwrap();
    assert_eq!(replayed, m, "the stored changes rebuild the same memory");
    let mut held = Recall::from(&memory);
    held.absorb(&stored).unwrap();
    let whole = Recall::from(&m);
    assert_eq!(
        (&held.engaged, &held.own_posts, &held.knowledge, held.last_reflection, held.read),
        (&whole.engaged, &whole.own_posts, &whole.knowledge, whole.last_reflection, 201),
        "and what steps read of it"
    );
    assert!(held.engaged.is_empty(), "a reflection leaves nothing engaged since it");
}
