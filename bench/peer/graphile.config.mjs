// PostGraphile 5 for the benchmark (bench/run copies this file next to its node_modules).
// The amber preset with the connection-filter plugin, as that plugin's documentation sets it
// up; PgIndexBehaviorsPlugin is disabled so unindexed columns are filterable, as in
// PostGraphile 4 (svc indexes neither `votes` nor `title` either).
import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import { makePgService } from "postgraphile/adaptors/pg";
import { PostGraphileConnectionFilterPreset } from "postgraphile-plugin-connection-filter";

export default {
  extends: [PostGraphileAmberPreset, PostGraphileConnectionFilterPreset],
  disablePlugins: ["PgIndexBehaviorsPlugin"],
  pgServices: [
    makePgService({ connectionString: process.env.DATABASE_URL, schemas: ["public"] }),
  ],
  grafserv: { host: "127.0.0.1", port: Number(process.env.PORT) },
};
