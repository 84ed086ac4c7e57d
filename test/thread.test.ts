import assert from "node:assert/strict";
import { test } from "node:test";
import { StringThread } from "../sdk/index.ts";

test("StringThread from tuples: completion, turns, messages, lastContent, metadata", () => {
  const t = new StringThread(
    [
      ["system", "be brief"],
      ["user", "2+2?"],
      ["assistant", "4"],
    ],
    { expected: "4" },
  );
  assert.equal(t.completion(), "4");
  assert.deepEqual(t.getTurns(), [
    ["system", "be brief"],
    ["user", "2+2?"],
    ["assistant", "4"],
  ]);
  assert.deepEqual(t.messages(), [
    ["system", "be brief"],
    ["user", "2+2?"],
  ]);
  assert.equal(t.lastContent(), "4");
  assert.deepEqual(t.metadata, { expected: "4" });
});

test("StringThread from {role, content} objects; metadata defaults to {}", () => {
  const t = new StringThread([
    { role: "user", content: "hi" },
    { role: "tool", content: "result" },
  ]);
  assert.equal(t.completion(), null, "the last turn is not an assistant turn");
  assert.deepEqual(t.messages(), t.getTurns(), "nothing is dropped without a final assistant turn");
  assert.equal(t.lastContent(), "result");
  assert.deepEqual(t.metadata, {});
  assert.deepEqual(t.toJSON(), {
    turns: [
      { role: "user", content: "hi" },
      { role: "tool", content: "result" },
    ],
    metadata: {},
  });
});

test("StringThread: empty thread, copies of turns, bad roles refused", () => {
  const empty = new StringThread([]);
  assert.equal(empty.completion(), null);
  assert.equal(empty.lastContent(), null);
  const t = new StringThread([["assistant", "x"]]);
  t.getTurns()[0][1] = "changed";
  assert.equal(t.completion(), "x");
  for (const role of ["", "x".repeat(65), "tab\there", "\u{1F600}"]) {
    assert.throws(() => new StringThread([[role, "x"]]), /a role is 1 to 64 characters without control characters/, JSON.stringify(role));
  }
  // @ts-expect-error: content must be a string
  assert.throws(() => new StringThread([{ role: "user", content: 5 }]), /content must be a string/);
});

test("StringThread keeps any role string verbatim: a developer turn is never read as system", () => {
  const t = new StringThread([
    ["developer", "be brief"],
    ["user", "q"],
    ["assistant", "a"],
  ]);
  assert.deepEqual(t.messages(), [
    ["developer", "be brief"],
    ["user", "q"],
  ]);
  assert.equal(t.completion(), "a");
  assert.deepEqual(t.toJSON().turns[0], { role: "developer", content: "be brief" });
  assert.equal(new StringThread([{ role: "ipython", content: "x" }]).completion(), null);
});
