-- The peers' schema: a conventional users/posts layout (serial keys, a foreign key from each
-- post to its author, an index on it) holding the same data as the svc example service.
-- PostGraphile 4 and 5 serve it, and the raw SQL scripts (bench/sql/peer-*.sql) query it.
CREATE TABLE users (
  id serial PRIMARY KEY,
  email text NOT NULL UNIQUE,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE posts (
  id serial PRIMARY KEY,
  slug text NOT NULL UNIQUE,
  title text NOT NULL,
  body text,
  votes integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  author_id integer REFERENCES users (id)
);

CREATE INDEX posts_author_id_idx ON posts (author_id);
