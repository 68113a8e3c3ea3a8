/** Names for the prompt and checks for the API, without LangChain (loaded only with a generator). */
const languageNames = new Intl.DisplayNames(["en"], { type: "language", fallback: "none" });
const regionNames = new Intl.DisplayNames(["en"], { type: "region", fallback: "none" });

/** "Spanish (es)" for a BCP 47 tag, the name itself for a name such as "Spanish". */
export function languageLabel(language: string): string {
  try {
    const [tag] = Intl.getCanonicalLocales(language);
    const name = tag ? languageNames.of(tag) : undefined;
    if (tag && name && name.toLowerCase() !== tag.toLowerCase()) return `${name} (${tag})`;
  } catch {
    // Not a tag: a language name.
  }
  return language;
}

/** Whether `language` is a BCP 47 tag or a plausible language name. */
export function isLanguage(language: string): boolean {
  if (/^[\p{L}][\p{L} ()-]{1,49}$/u.test(language)) return true;
  try {
    return Intl.getCanonicalLocales(language).length === 1;
  } catch {
    return false;
  }
}

/** "United States (US)" for a country code, or "an unknown country". */
export function countryLabel(country: string | undefined): string {
  if (!country) return "an unknown country";
  const name = regionNames.of(country);
  return name ? `${name} (${country})` : country;
}
