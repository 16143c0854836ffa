-- Query 4: the first 50 posts of the filter, and the filter's count.
SELECT id, title, votes FROM posts WHERE votes > 500 AND title ILIKE '%graphql%' ORDER BY id LIMIT 50;
SELECT count(*) FROM posts WHERE votes > 500 AND title ILIKE '%graphql%';
