//! The real persona sets load with their published counts; malformed files
//! fail naming the file and the position.

use std::path::PathBuf;

use super::*;

fn shared(rel: &str) -> PathBuf {
    some_jobs::testing::shared_dir().join("personas").join(rel)
}

#[test]
fn the_oasis_reddit_set_has_36_profiles() {
    let p = load_oasis_reddit(&shared("oasis/reddit_user_data_36.json")).unwrap();
    assert_eq!(p.len(), 36);
    assert_eq!(p[0].username, "millerhospitality");
    assert!(
        p[0].description.starts_with("James Miller (millerhospitality), 40 years old, male, from UK, MBTI ESTJ."),
        "{}",
        p[0].description
    );
    assert!(p[0].description.contains("Interested in: Economics, Business."));
}

#[test]
fn the_oasis_twitter_set_has_111_users_with_graph_and_activity() {
    let p = load_oasis_twitter(&shared("oasis/twitter_user_all_id_time.csv")).unwrap();
    assert_eq!(p.len(), 111);
    assert_eq!(p[1].following, vec![AgentId(32)]);
    assert_eq!(p[1].hourly_activity.as_deref().unwrap()[..4], [20, 14, 11, 7]);
    assert_eq!(p[0].description, "Lecturer in Healthcare Marketing and Commercialisation at UCL Global Business School for Health");
    let edges: usize = p.iter().map(|x| x.following.len()).sum();
    assert_eq!(edges, 85, "the file's following_agentid_list entries");
}

#[test]
fn the_recagent_set_has_1000_users_and_its_relationship_graph() {
    let p = load_recagent(&shared("recagent/user_1000.csv"), Some(&shared("recagent/relationship_1000.csv"))).unwrap();
    assert_eq!(p.len(), 1000);
    assert_eq!(
        p[0].description,
        "David Smith, 25 years old, male. Traits: compassionate, caring, ambitious, optimistic. Occupation: photographer. Interests: sci-fi movies, comedy movies."
    );
    let edges: usize = p.iter().map(|x| x.following.len()).sum();
    assert_eq!(edges, 20_846);
    assert!(p[0].following.contains(&AgentId(1)) && p[1].following.contains(&AgentId(0)));
    let demo = load_recagent(&shared("recagent/user.csv"), Some(&shared("recagent/relationship.csv"))).unwrap();
    assert_eq!(demo.len(), 20);
    assert_eq!(demo[0].following, [1, 13, 16, 9].map(AgentId), "Tommie follows Eve, Emma, Ben and Olivia, by name");
}

#[test]
fn malformed_persona_files_fail_naming_file_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.json");
    std::fs::write(&f, r#"[{"realname": "A", "username": "a", "bio": "", "persona": "", "age": "forty", "gender": "m", "mbti": "X", "country": "UK", "profession": "p", "interested_topics": []}]"#).unwrap();
    let e = load_oasis_reddit(&f).unwrap_err();
    assert_eq!((e.path.clone(), e.at.as_str()), (f.clone(), "[0]"));
    assert!(e.message.contains("invalid type: string \"forty\""), "{e}");
    std::fs::write(&f, r#"[{"realname": "A", "username": "a", "bio": "", "persona": "", "age": 4, "gender": "m", "mbti": "X", "country": "UK", "profession": "p", "interested_topics": [], "shoe_size": 9}]"#).unwrap();
    assert!(load_oasis_reddit(&f).unwrap_err().message.starts_with("unknown field `shoe_size`"));
    std::fs::write(&f, "[{\"realname\": \"A\",\n \"username\": ").unwrap();
    let e = load_oasis_reddit(&f).unwrap_err();
    assert_eq!(e.at, "line 2 column 13");

    let c = dir.path().join("u.csv");
    std::fs::write(&c, "id,name,age,traits,status\n0,Ann,31,kind,nurse\n1,Bob,old,calm,chef\n").unwrap();
    let e = load_recagent(&c, None).unwrap_err();
    assert_eq!(e.to_string(), format!("{}: at line 3, column age: is not a whole number: \"old\"", c.display()));
    std::fs::write(&c, "id,name,age,traits,status,mood\n0,Ann,31,kind,nurse,ok\n").unwrap();
    assert_eq!(load_recagent(&c, None).unwrap_err().message, "unknown column \"mood\"");
    std::fs::write(&c, "id,name,age,traits,status\n0,Ann,31,kind,nurse\n").unwrap();
    let rel = dir.path().join("rel.csv");
    std::fs::write(&rel, "user_1,user_2,relationship\n0,7,friend\n").unwrap();
    let e = load_recagent(&c, Some(&rel)).unwrap_err();
    assert_eq!((e.at.as_str(), e.path == rel), ("line 2, column user_2", true));

    let t = dir.path().join("t.csv");
    let header = TWITTER_COLUMNS.join(",");
    std::fs::write(&t, format!("{header}\n0,1,n,u,d,c,1,1,[],\"[3, x]\",[],[],\"[1]\",[],d\n")).unwrap();
    let e = load_oasis_twitter(&t).unwrap_err();
    assert_eq!(e.at, "line 2, column following_agentid_list");
    assert_eq!(python_int_list("[1, 2]"), Some(vec![1, 2]));
    assert_eq!(python_int_list("['972651']"), Some(vec![972651]));
}

#[test]
fn the_built_in_set_is_recagents_thousand_users() {
    let p = builtin_recagent();
    assert_eq!(p.len(), 1000);
    assert_eq!(p, load_recagent(&shared("recagent/user_1000.csv"), None).unwrap());
}
