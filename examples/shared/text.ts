// Helpers the graders in graders.ts share: `gradebox push` bundles this file into each of them.

/** The words of a text, lower-cased, without punctuation. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
}
