// How many tests of a bun test JUnit report ran on PostgreSQL: those of a file whose name
// says postgres (test/e2e/startup.postgres.test.ts) and those under a describe "on postgres"
// (the storage tests run once per dialect, test/unit/helpers.ts). Skipped ones do not count.
const [path] = Bun.argv.slice(2);
if (!path) throw new Error("usage: bun .ci/postgres-tests.ts REPORT.xml");
const xml = await Bun.file(path).text();

const attr = (attrs: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(attrs)?.[1] ?? "";
const onPostgres: boolean[] = [];
let ran = 0;
for (const [tag, suite, testcase, body] of xml.matchAll(/<testsuite\b([^>]*)>|<\/testsuite>|<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
  if (suite !== undefined) {
    const inside = onPostgres.at(-1) ?? false;
    onPostgres.push(inside || attr(suite, "name") === "on postgres" || /postgres[^/]*$/i.test(attr(suite, "file")));
  } else if (tag === "</testsuite>") {
    onPostgres.pop();
  } else if (testcase !== undefined && onPostgres.at(-1) && !/<skipped\b/.test(body ?? "")) {
    ran++;
  }
}
console.log(ran);
