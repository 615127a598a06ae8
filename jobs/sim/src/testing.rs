//! Scripted answers for tests and benchmarks that run the simulation
//! without a model: a scripted endpoint or `ScriptedModel` answers with
//! [`sim_answer`].

/// FNV-1a: a stable number from the prompt.
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A well-formed answer to every simulation prompt (`jobs/sim/prompts/`),
/// decided by the prompt's text alone: the same request always gets the
/// same answer, whatever the order or the worker.
pub fn sim_answer(prompt: &str) -> String {
    let h = hash(prompt);
    if prompt.starts_with("Turn the short description") {
        let names = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fay"];
        return format!(
            r#"{{"name": "{}", "age": {}, "gender": "Female", "nationality": "Irish", "personality": "Curious", "hobbies": "Running, Baking", "detailed historical behaviour information": "Runs a bakery. Trained for a marathon in {}.", "preferences for social media content": "Bread recipes and race reports.", "knowledge": "Knows sourdough starters and pacing."}}"#,
            names[(h % 6) as usize],
            20 + h % 50,
            2000 + h % 20
        );
    }
    if prompt.contains("Plan a typical week") {
        let (browse, day) = (h % 24, ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"][(h / 24 % 7) as usize]);
        let post = (browse + 1) % 24;
        return format!(
            "Browsing time: {browse:02}:00-{:02}:00\nPosting days: {day}\nPosting time: {post:02}:00-{:02}:00\nLike probability: 50%\nReblog probability: 20%\nComment probability: 20%\nPosts per week: 2",
            (browse + 1) % 24,
            (post + 1) % 24
        );
    }
    if prompt.contains("One post from the feed is shown here") {
        let yes = |b: u64| if h >> b & 1 == 1 { "yes" } else { "no" };
        let comment = if h >> 3 & 3 == 0 { format!("Good point, {}", h % 1000) } else { "none".into() };
        return format!("Like: {}\nReblog: {}\nComment: {comment}", yes(1), yes(2));
    }
    if prompt.contains("The posts in it are numbered below") {
        let shown = prompt.split("\nPosts:\n").nth(1).and_then(|r| r.split("\n\n").next()).map_or(0, |r| r.lines().count());
        let reactions: Vec<String> = (1..=shown)
            .map(|i| match i {
                1 => r#"{"post": 1, "like": true, "reblog": false, "comment": ""}"#.to_string(),
                2 => format!(r#"{{"post": 2, "like": true, "reblog": true, "comment": "Well said {}"}}"#, h % 1000),
                _ => format!(r#"{{"post": {i}, "like": false, "reblog": false, "comment": ""}}"#),
            })
            .collect();
        return format!(r#"{{"reactions": [{}]}}"#, reactions.join(", "));
    }
    if prompt.contains("Suggest") && prompt.contains("topics you could post about") {
        let count = prompt.split("Suggest ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(1u64);
        return (1..=count).map(|i| format!("{i}. topic {} number {i}", h % 100_000)).collect::<Vec<_>>().join("\n");
    }
    if prompt.contains("Write one Twitter post on the topic given") {
        // Words drawn by the hash, so an agent's posts are not near-duplicates.
        const WORDS: [&str; 32] = [
            "bread",
            "river",
            "marathon",
            "violin",
            "garden",
            "startup",
            "comet",
            "harbor",
            "chess",
            "lantern",
            "glacier",
            "tango",
            "orchard",
            "robot",
            "canyon",
            "poetry",
            "bicycle",
            "volcano",
            "museum",
            "falcon",
            "recipe",
            "thunder",
            "meadow",
            "compass",
            "festival",
            "crystal",
            "library",
            "summit",
            "pottery",
            "tidepool",
            "sketchbook",
            "airship",
        ];
        let words: Vec<String> =
            (0..8).map(|i| h.rotate_right(i * 8)).map(|b| format!("{}{}", WORDS[(b & 31) as usize], b >> 5 & 7)).collect();
        return format!("{}.", words.join(", "));
    }
    if prompt.starts_with("Summarise the social media post") {
        return "A short summary of a post.".into();
    }
    if prompt.contains("whose posts you would like to keep seeing") {
        let user = prompt.split("A post by user ").nth(1).and_then(|r| r.split(' ').next());
        return user.map_or_else(|| "do not follow".into(), str::to_string);
    }
    if prompt.contains("An interviewer asks you a question") {
        let options = prompt.split("reply with its letter only:\n").nth(1).map_or(0, |r| r.lines().filter(|l| l.contains(") ")).count());
        if options > 0 {
            return ((b'A' + (h % options as u64) as u8) as char).to_string();
        }
        let name = prompt.split("\"name\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("someone");
        return format!("I am {name}, and I mostly come here for the posts I like ({}).", h % 1000);
    }
    if prompt.starts_with("You are grading a piece of text") {
        return "Informativeness: 2\nConsistency: 3\nHumanness: 3".into();
    }
    "none".into()
}
