//! The data set every server holds: `users` users with [`POSTS_PER_USER`] posts each, generated
//! from a fixed seed, so every run and every server gets the same content.
//!
//! Titles are four lowercase words from [`WORDS`], so `title_contains: "graphql"` selects about
//! a fifth of the posts, and votes are spread evenly over 0..1000, so `votes_gt: 500` keeps about
//! half of those. svc's `_contains` ignores case, so the peers use `includesInsensitive` and the
//! raw SQL `ILIKE`: every server does the same work and selects the same rows. Query 6 looks for
//! the pair of words `graphql rust` (about 1.2 % of the posts).

use std::fmt::Write;

pub const POSTS_PER_USER: usize = 10;

/// The filter of query 4, shared by every server.
pub const FILTER_VOTES_GT: i64 = 500;
pub const FILTER_TITLE_CONTAINS: &str = "graphql";

/// The substring of query 6: two words side by side, in about one title of 85 (three places for
/// the pair in four words of sixteen), so an index narrows the search where a scan reads every
/// row.
pub const SEARCH_TITLE_CONTAINS: &str = "graphql rust";

const WORDS: [&str; 16] = [
    "graphql", "rust", "schema", "server", "query", "index", "async", "model", "table", "cache",
    "latency", "batch", "cursor", "filter", "plan", "tokio",
];

#[derive(Debug, Clone)]
pub struct User {
    pub email: String,
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct Post {
    pub slug: String,
    pub title: String,
    pub body: String,
    pub votes: i64,
    /// Index of the author in the user list.
    pub author: usize,
}

#[derive(Debug)]
pub struct Dataset {
    pub users: Vec<User>,
    /// User-major: the posts of user 0, then those of user 1, …
    pub posts: Vec<Post>,
}

/// splitmix64: small, fast and fully determined by its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| WORDS[self.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Dataset {
    pub fn generate(users: usize) -> Dataset {
        let mut rng = Rng(0x5EED_5EED);
        let users: Vec<User> = (0..users)
            .map(|i| User {
                email: format!("user{i:05}@example.com"),
                name: format!("user {i} {}", rng.words(1)),
            })
            .collect();
        let posts = (0..users.len() * POSTS_PER_USER)
            .map(|i| Post {
                slug: format!("post-{i:06}"),
                title: rng.words(4),
                body: format!("{}.", rng.words(20)),
                votes: rng.below(1000) as i64,
                author: i / POSTS_PER_USER,
            })
            .collect();
        Dataset { users, posts }
    }

    /// How many posts query 4's filter selects.
    pub fn filter_count(&self) -> usize {
        self.posts
            .iter()
            .filter(|p| p.votes > FILTER_VOTES_GT && p.title.contains(FILTER_TITLE_CONTAINS))
            .count()
    }

    /// How many posts query 6's substring selects.
    pub fn search_count(&self) -> usize {
        self.posts
            .iter()
            .filter(|p| p.title.contains(SEARCH_TITLE_CONTAINS))
            .count()
    }

    /// SQL that fills the peers' schema (`bench/peer/schema.sql`) with this data set: users get
    /// ids 1..=n and posts 1..=m in the order of the lists.
    pub fn peer_sql(&self) -> String {
        let mut out = String::from("BEGIN;\nCOPY users (id, email, name) FROM stdin;\n");
        for (i, u) in self.users.iter().enumerate() {
            let _ = writeln!(out, "{}\t{}\t{}", i + 1, u.email, u.name);
        }
        out.push_str("\\.\nCOPY posts (id, slug, title, body, votes, author_id) FROM stdin;\n");
        for (i, p) in self.posts.iter().enumerate() {
            let _ = writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}\t{}",
                i + 1,
                p.slug,
                p.title,
                p.body,
                p.votes,
                p.author + 1
            );
        }
        out.push_str(
            "\\.\n\
             SELECT setval('users_id_seq', (SELECT max(id) FROM users));\n\
             SELECT setval('posts_id_seq', (SELECT max(id) FROM posts));\n\
             COMMIT;\nANALYZE;\n",
        );
        out
    }
}
