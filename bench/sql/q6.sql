-- Query 6: the first 50 posts whose title holds the pair of words, and their count.
SELECT id, title, votes FROM posts WHERE title ILIKE '%graphql rust%' ORDER BY id LIMIT 50;
SELECT count(*) FROM posts WHERE title ILIKE '%graphql rust%';
