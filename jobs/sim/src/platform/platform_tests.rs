//! Platform rules, fixed application order, refusals that change nothing,
//! and the digest.

use super::*;

fn platform(n: u32) -> Platform {
    let mut p = Platform::new();
    (0..n).for_each(|a| p.register(AgentId(a)));
    p
}

fn act(agent: u32, seq: u32, action: Action) -> AgentAction {
    AgentAction { agent: AgentId(agent), seq, action }
}

#[test]
fn actions_apply_in_agent_then_sequence_order_whatever_their_arrival() {
    let turn_actions = vec![
        act(2, 0, Action::Post { text: "from two".into() }),
        act(1, 1, Action::Post { text: "one, second".into() }),
        act(1, 0, Action::Post { text: "one, first".into() }),
    ];
    let mut a = platform(3);
    let mut reversed = turn_actions.clone();
    reversed.reverse();
    let mut b = platform(3);
    let out = a.apply_turn(Turn(0), turn_actions);
    b.apply_turn(Turn(0), reversed);
    assert_eq!(
        out.iter().map(|o| (o.agent.0, o.seq, o.created.map(|p| p.0))).collect::<Vec<_>>(),
        [(1, 0, Some(0)), (1, 1, Some(1)), (2, 0, Some(2))]
    );
    assert_eq!(&*a.post(PostId(0)).unwrap().content, "one, first");
    assert_eq!(a, b);
    assert_eq!(a.digest(), b.digest());
}

#[test]
fn likes_reblogs_comments_and_follows_change_the_counts() {
    let mut p = platform(3);
    p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "hello".into() })]);
    let out = p.apply_turn(
        Turn(1),
        vec![
            act(1, 0, Action::Browse { posts: vec![PostId(0)] }),
            act(1, 1, Action::Like { post: PostId(0) }),
            act(1, 2, Action::Reblog { post: PostId(0) }),
            act(1, 3, Action::Comment { post: PostId(0), text: "nice".into() }),
            act(1, 4, Action::Follow { agent: AgentId(0) }),
            act(2, 0, Action::Like { post: PostId(0) }),
        ],
    );
    assert!(out.iter().all(|o| o.result.is_ok()), "{out:?}");
    let post = p.post(PostId(0)).unwrap();
    assert_eq!((post.likes().len(), post.reblogs().get(&AgentId(1)), post.replies), (2, Some(&Turn(1)), 1));
    assert_eq!(p.post(PostId(1)).unwrap().parent, Some(PostId(0)));
    assert_eq!(p.followers_count(AgentId(0)), 1);
    assert!(p.has_seen(AgentId(1), PostId(0)) && !p.has_seen(AgentId(2), PostId(0)));
    assert_eq!(p.posts_since(Turn(0)).map(|x| x.id).collect::<Vec<_>>(), [PostId(0)], "comments are not feed posts");
}

#[test]
fn posts_nobody_engaged_with_hold_no_engagement_and_stay_small() {
    let mut p = platform(2);
    p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "a".into() }), act(0, 1, Action::Post { text: "b".into() })]);
    p.apply_turn(
        Turn(1),
        vec![act(1, 0, Action::Like { post: PostId(0) }), act(1, 1, Action::Comment { post: PostId(0), text: "c".into() })],
    );
    let engaged = |id: u64| p.post(PostId(id)).unwrap().engagement.is_some();
    assert_eq!((engaged(0), engaged(1), engaged(2)), (true, false, false), "only the liked post holds likes");
    // Every post and comment of a run stays in memory: a regression here
    // costs a million agents' week hundreds of megabytes.
    assert!(size_of::<Option<Post>>() <= 64, "{} bytes", size_of::<Option<Post>>());
    assert!(!p.has_seen(AgentId(1), PostId(u64::MAX)), "an id no post can have is not seen, not a panic");
}

#[test]
fn feeds_draw_posts_by_turn_and_removed_posts_leave_every_view() {
    let mut p = platform(2);
    for t in 0..4u32 {
        let mut actions = vec![act(0, 0, Action::Post { text: format!("post {t}") })];
        if t > 0 {
            // On the post of the turn before.
            let post = PostId((2 * u64::from(t)).saturating_sub(3));
            actions.push(act(1, 0, Action::Comment { post, text: format!("re {t}") }));
        }
        p.apply_turn(Turn(t), actions);
    }
    // Ids in order of application: post 0 (turn 0), then per turn a post and a comment.
    let since = |p: &Platform, t| p.posts_since(Turn(t)).map(|x| x.id.0).collect::<Vec<_>>();
    assert_eq!((since(&p, 0), since(&p, 2), since(&p, 4)), (vec![0, 1, 3, 5], vec![3, 5], vec![]));
    p.remove_post(PostId(3)).unwrap();
    p.remove_post(PostId(4)).unwrap();
    assert_eq!(p.remove_post(PostId(3)), Err(ApplyError::NoSuchPost(PostId(3))));
    assert_eq!((since(&p, 0), since(&p, 2)), (vec![0, 1, 5], vec![5]));
    assert!(p.post(PostId(3)).is_none() && p.post(PostId(99)).is_none());
    assert_eq!(p.posts().count(), 5);
    assert_eq!(p.post(PostId(1)).unwrap().replies, 0, "the removed comment 4 answered post 1");
    // Ids are never reused.
    let out = p.apply_turn(Turn(4), vec![act(0, 0, Action::Post { text: "after".into() })]);
    assert_eq!(out[0].created, Some(PostId(7)));
    assert_eq!(since(&p, 4), [7]);
}

#[test]
fn refused_actions_are_recorded_and_change_nothing() {
    let mut p = platform(2);
    p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "hello".into() }), act(1, 0, Action::Like { post: PostId(0) })]);
    let before = p.clone();
    let digest = p.digest();
    let out = p.apply_turn(
        Turn(1),
        vec![
            act(1, 0, Action::Like { post: PostId(99) }),
            act(1, 1, Action::Comment { post: PostId(42), text: "hi".into() }),
            act(1, 2, Action::Browse { posts: vec![PostId(0), PostId(7)] }),
            act(1, 3, Action::Like { post: PostId(0) }),
            act(1, 4, Action::Follow { agent: AgentId(1) }),
            act(1, 5, Action::Follow { agent: AgentId(5) }),
            act(1, 6, Action::Post { text: "  ".into() }),
            act(1, 6, Action::Post { text: "again".into() }),
            act(9, 0, Action::Post { text: "ghost".into() }),
        ],
    );
    let errors: Vec<String> = out.iter().map(|o| o.result.clone().unwrap_err().to_string()).collect();
    assert_eq!(
        errors,
        [
            "post 99 does not exist",
            "post 42 does not exist",
            "post 7 does not exist",
            "post 0 is already liked by this agent",
            "an agent cannot follow itself",
            "agent 5 to follow does not exist",
            "the text is empty",
            "sequence number 6 repeats an earlier action of this agent in this turn",
            "agent 9 has no account",
        ]
    );
    assert!(out.iter().all(|o| o.created.is_none()));
    assert_eq!(p.digest(), digest, "nothing of the state changed");
    assert!(!p.has_seen(AgentId(1), PostId(0)), "a browse naming one missing post marks none as seen");
    assert_eq!(p.posts().count(), before.posts().count());
    assert_ne!(p.history_digest(), before.history_digest(), "the refused turn is still in the history");
}

#[test]
fn the_digest_changes_with_any_part_of_the_state() {
    let mut p = platform(2);
    let empty = p.digest();
    assert_eq!(empty.len(), 64);
    p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "a".into() })]);
    let one = p.digest();
    let mut q = p.clone();
    q.apply_turn(Turn(1), vec![act(1, 0, Action::Browse { posts: vec![PostId(0)] })]);
    let mut r = p.clone();
    r.apply_turn(Turn(1), vec![act(1, 0, Action::Follow { agent: AgentId(0) })]);
    let all = [empty, one, q.digest(), r.digest()];
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), 4);
    assert_eq!(p.seed_follow(AgentId(0), AgentId(0)), Err(ApplyError::FollowSelf));
}

#[test]
fn the_history_digest_follows_every_change_and_order() {
    let mut a = platform(2);
    let mut b = platform(2);
    assert_eq!(a.history_digest(), b.history_digest());
    let empty = Platform::new().history_digest();
    assert_ne!(a.history_digest(), empty);
    let turn = vec![act(0, 0, Action::Post { text: "a".into() }), act(1, 0, Action::Like { post: PostId(5) })];
    a.apply_turn(Turn(0), turn.clone());
    b.apply_turn(Turn(0), turn.into_iter().rev().collect());
    assert_eq!(a.history_digest(), b.history_digest(), "arrival order does not matter");
    let mut c = a.clone();
    a.apply_turn(Turn(1), vec![]);
    c.apply_turn(Turn(2), vec![]);
    assert_ne!(a.history_digest(), c.history_digest(), "nor does an empty turn go unrecorded");
    assert_eq!(a.digest(), c.digest());
}

#[test]
fn a_turn_refuses_a_second_like_reblog_or_follow_and_keeps_the_rest() {
    let mut p = platform(5);
    p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "popular".into() }), act(0, 1, Action::Post { text: "other".into() })]);
    p.apply_turn(Turn(1), vec![act(3, 0, Action::Like { post: PostId(0) })]);
    let out = p.apply_turn(
        Turn(2),
        vec![
            act(4, 0, Action::Like { post: PostId(0) }),
            act(1, 0, Action::Like { post: PostId(0) }),
            act(1, 1, Action::Reblog { post: PostId(0) }),
            act(1, 2, Action::Like { post: PostId(1) }),
            act(1, 3, Action::Like { post: PostId(0) }),
            act(1, 4, Action::Reblog { post: PostId(0) }),
            act(2, 0, Action::Like { post: PostId(0) }),
            act(3, 0, Action::Like { post: PostId(0) }),
        ],
    );
    let refused: Vec<_> = out.iter().filter_map(|o| o.result.clone().err().map(|e| (o.agent.0, o.seq, e))).collect();
    assert_eq!(
        refused,
        [
            (1, 3, ApplyError::AlreadyLiked(PostId(0))),
            (1, 4, ApplyError::AlreadyReblogged(PostId(0))),
            (3, 0, ApplyError::AlreadyLiked(PostId(0)))
        ]
    );
    let popular = p.post(PostId(0)).unwrap();
    assert_eq!(popular.likes().iter().map(|a| a.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(popular.reblogs().iter().map(|(a, t)| (a.0, t.0)).collect::<Vec<_>>(), [(1, 2)]);
    assert_eq!(p.post(PostId(1)).unwrap().likes().iter().map(|a| a.0).collect::<Vec<_>>(), [1]);
    let again = p.apply_turn(Turn(3), vec![act(2, 0, Action::Like { post: PostId(0) })]);
    assert_eq!(again[0].result, Err(ApplyError::AlreadyLiked(PostId(0))));
    p.apply_turn(Turn(4), vec![act(3, 0, Action::Follow { agent: AgentId(0) })]);
    let follows = p.apply_turn(
        Turn(5),
        vec![
            act(4, 0, Action::Follow { agent: AgentId(0) }),
            act(1, 0, Action::Follow { agent: AgentId(0) }),
            act(1, 1, Action::Follow { agent: AgentId(0) }),
            act(2, 0, Action::Follow { agent: AgentId(1) }),
            act(2, 1, Action::Follow { agent: AgentId(0) }),
        ],
    );
    assert_eq!(follows.iter().filter(|o| o.result.is_err()).count(), 1);
    assert_eq!(follows[1].result, Err(ApplyError::AlreadyFollowing(AgentId(0))));
    let followers = |p: &Platform, a: u32| p.followers[&AgentId(a)].iter().map(|f| f.0).collect::<Vec<_>>();
    assert_eq!((followers(&p, 0), followers(&p, 1)), (vec![1, 2, 3, 4], vec![2]));
    assert!(p.is_following(AgentId(2), AgentId(1)) && p.followees(AgentId(2)).count() == 2);
}
