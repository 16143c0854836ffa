-- Query 2: one post by id.
\set id random(1, :posts)
SELECT id, slug, title, votes, created_at FROM posts WHERE id = :id;
