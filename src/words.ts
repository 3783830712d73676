/** "a", "a or b", "a, b or c": a list in a sentence. */
export function orList(words: string[]): string {
  return words.length <= 1 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} or ${words[words.length - 1]}`;
}
