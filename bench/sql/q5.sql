-- Query 5: create a post (a unique slug per transaction).
\set author random(1, :users)
\set votes random(0, 999)
INSERT INTO posts (slug, title, body, votes, author_id)
VALUES ('pgbench-' || txid_current(), 'benchmark post', 'written by the benchmark''s create query.', :votes, :author)
RETURNING id, slug;
