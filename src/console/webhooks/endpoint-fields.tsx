import { useId } from "react";
import { EVENT_TYPES, isEventType, type Endpoint, type EventType } from "./endpoint";

/** What the create and edit forms ask for: URL, description and the event types (none checked: every type). */
export function EndpointFields({ endpoint }: { endpoint?: Endpoint }) {
  const id = useId();
  return (
    <>
      <label>
        URL
        <input name="url" type="url" required autoComplete="off" placeholder="https://example.com/textwire/events" defaultValue={endpoint?.url} />
      </label>
      <label>
        Description
        <input name="description" autoComplete="off" maxLength={500} defaultValue={endpoint?.description ?? ""} />
      </label>
      <fieldset aria-describedby={`${id}-all`}>
        <legend>Events</legend>
        {EVENT_TYPES.map(({ type, description }) => (
          <label key={type}>
            <input type="checkbox" name="events" value={type} defaultChecked={endpoint?.events?.some((t) => t === type)} />
            {type}: {description}
          </label>
        ))}
        <small id={`${id}-all`}>None checked: every type, present and future.</small>
      </fieldset>
    </>
  );
}

/** The fields as the procedures take them; `events` empty means every type. */
export function readEndpointFields(form: HTMLFormElement): { url: string; description: string; events: EventType[] } {
  const data = new FormData(form);
  return {
    url: String(data.get("url") ?? ""),
    description: String(data.get("description") ?? ""),
    events: data.getAll("events").filter(isEventType),
  };
}
