-- Query 3: 10 users with 10 posts each, in one statement.
SELECT u.id, u.name, p.id, p.title, p.votes
FROM (SELECT id, name FROM users ORDER BY id LIMIT 10) u
CROSS JOIN LATERAL (SELECT id, title, votes FROM posts WHERE author_id = u.id ORDER BY id LIMIT 10) p
ORDER BY u.id, p.id;
