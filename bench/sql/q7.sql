-- Query 7: query 1 (100 posts, 5 fields, ordered by id); the GraphQL servers get its first
-- argument in a variable and leave out the variable of its offset.
SELECT id, slug, title, votes, created_at FROM posts ORDER BY id LIMIT 100;
