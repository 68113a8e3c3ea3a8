import { Fragment, useId } from "react";
import type { LineNetwork } from "../../vocabulary/lines";
import { NETWORK_FORMS, type Line } from "./line";

/**
 * A network's settings and credentials as form fields named `settings.<name>` and
 * `credentials.<name>`. Credentials are password fields, never filled in: on a line being
 * edited (`line`) they are optional, left blank to keep the stored ones.
 */
export function NetworkFields({ network, line }: { network: LineNetwork; line?: Line }) {
  const id = useId();
  const fields = NETWORK_FORMS[network] as readonly (typeof NETWORK_FORMS)[LineNetwork][number][];
  if (fields.length === 0)
    return <p>A loopback line needs no settings: it sends nowhere and takes inbound messages from the console or POST /webhooks/loopback.</p>;
  return (
    <fieldset>
      <legend>{network} settings</legend>
      {fields.map((field, i) => {
        const hintId = `${id}-${i}`;
        const hint = field.in === "credentials" && line ? [field.hint, "Blank: kept as stored."].filter(Boolean).join(" ") : field.hint;
        const described = hint ? hintId : undefined;
        const name = `${field.in}.${field.name}`;
        const stored = line?.settings?.[field.name];
        return (
          <Fragment key={name}>
            <label>
              {field.label}
              {field.in === "credentials" ? (
                <input name={name} type="password" autoComplete="new-password" required={!line} aria-describedby={described} />
              ) : field.options ? (
                <select name={name} defaultValue={typeof stored === "string" ? stored : ""} aria-describedby={described}>
                  <option value="">Not set</option>
                  {field.options.map((option) => (
                    <option key={option}>{option}</option>
                  ))}
                </select>
              ) : (
                <input
                  name={name}
                  type={field.kind}
                  required={field.required}
                  autoComplete="off"
                  defaultValue={stored === undefined || stored === null ? "" : String(stored)}
                  aria-describedby={described}
                />
              )}
            </label>
            {hint && <small id={hintId}>{hint}</small>}
          </Fragment>
        );
      })}
    </fieldset>
  );
}

/** The settings and credentials filled in (blank ones left out; numbers as numbers), as lines.create and lines.update take them. */
export function readNetworkFields(form: HTMLFormElement, network: LineNetwork): { settings: Record<string, unknown>; credentials: Record<string, string> } {
  const data = new FormData(form);
  const settings: Record<string, unknown> = {};
  const credentials: Record<string, string> = {};
  for (const field of NETWORK_FORMS[network] as readonly (typeof NETWORK_FORMS)[LineNetwork][number][]) {
    const value = String(data.get(`${field.in}.${field.name}`) ?? "").trim();
    if (value === "") continue;
    if (field.in === "credentials") credentials[field.name] = value;
    else settings[field.name] = field.kind === "number" ? Number(value) : value;
  }
  return { settings, credentials };
}

/** A select of the lines a line can fall back to (every other one), "None" first; its value is a line id or "". */
export function FallbackSelect({ lines, self, value }: { lines: Line[]; self?: string; value?: string | null }) {
  const hintId = useId();
  return (
    <>
      <label>
        Fallback
        <select name="fallback" defaultValue={value ?? ""} aria-describedby={hintId}>
          <option value="">None</option>
          {lines
            .filter((line) => line.id !== self)
            .map((line) => (
              <option key={line.id} value={line.id}>
                {line.name} ({line.network})
              </option>
            ))}
        </select>
      </label>
      <small id={hintId}>Where a send goes once when this line cannot reach the contact (not on iMessage, the server refusing connections).</small>
    </>
  );
}
