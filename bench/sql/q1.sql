-- Query 1: 100 posts, 5 fields, ordered by id.
SELECT id, slug, title, votes, created_at FROM posts ORDER BY id LIMIT 100;
