-- PostGraphile 4's simple subscriptions for the fan-out benchmark (bench/subscriptions): every
-- created post is announced on the `posts` topic (`listen(topic: "posts")`), whose channel is
-- `postgraphile:posts`; `__node__` names the row (table, primary key) so that `relatedNode`
-- resolves to it. Loaded after bench/peer/schema.sql.
CREATE FUNCTION notify_post_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(
    'postgraphile:posts',
    json_build_object('__node__', json_build_array('posts', NEW.id))::text
  );
  RETURN NEW;
END;
$$;

CREATE TRIGGER posts_created AFTER INSERT ON posts
  FOR EACH ROW EXECUTE FUNCTION notify_post_created();
