import { useId } from "react";
import type { MessageRecord } from "../../messages/schemas";
import type { NetworkCapabilities } from "../../vocabulary/network";
import { LocalTime } from "../components/local-time";
import { MessageActions } from "./message-actions";
import { preview } from "./preview";
import { REACTION_NAMES } from "./reactions";

const kilobytes = (size: number) => `${Math.max(1, Math.round(size / 1024))} KB`;

/** A file of a message: an image inline (a link to the full size), anything else a link; the url works with the session cookie. */
function MediaItem({ media, index }: { media: MessageRecord["media"][number]; index: number }) {
  const description = `${media.content_type}, ${kilobytes(media.size)}`;
  if (media.content_type.startsWith("image/")) {
    return (
      <a href={media.url} target="_blank" rel="noreferrer">
        <img src={media.url} alt={`Image ${index + 1} (${description})`} />
      </a>
    );
  }
  return (
    <a href={media.url} target="_blank" rel="noreferrer">
      File {index + 1} ({description})
    </a>
  );
}

/** The start of a message, to say which one a threaded reply answers. */
const excerpt = (message: MessageRecord) => {
  const text = preview(message);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
};

/** The reactions standing on a message, each with who gave it: "You" (ours) or the contact's number. */
function Reactions({ reactions }: { reactions: MessageRecord["reactions"] }) {
  return (
    <ul className="reactions" aria-label="Reactions">
      {reactions.map(({ reaction, direction, phone, timestamp }) => (
        <li key={`${direction}${phone}`} title={new Date(timestamp).toLocaleString()}>
          {direction === "outbound" ? "You" : <bdi>{phone}</bdi>}: <span aria-hidden="true">{REACTION_NAMES[reaction].emoji}</span> {REACTION_NAMES[reaction].name}
        </li>
      ))}
    </ul>
  );
}

/**
 * One message of a thread: direction (in a group, `showSender`: who sent a received one), local time, status, "Edited" or "Unsent", its error,
 * its files, the message it answers, its reactions, "Read" (`showRead`: our last message the
 * contact read), its line's name (`line`: given when the deployment has several lines) and what
 * the operator can do with it (`capabilities`: once known).
 */
export function MessageItem({
  message,
  repliesTo,
  showRead,
  showSender = false,
  line,
  capabilities,
}: {
  message: MessageRecord;
  repliesTo: MessageRecord | undefined;
  showRead: boolean;
  showSender?: boolean;
  line?: string | undefined;
  capabilities: NetworkCapabilities | undefined;
}) {
  const sent = message.direction === "outbound";
  // What each action button is described by: the text, or the heading line of a message without one.
  const describedId = useId();
  // An unsent message was maybe edited first: what counts is that it is gone.
  const change = message.unsent_at ? { label: "Unsent", at: message.unsent_at } : message.edited_at ? { label: "Edited", at: message.edited_at } : null;
  return (
    <li className={sent ? "sent" : "received"}>
      <small id={message.message ? undefined : describedId}>
        <strong>{sent ? "Sent" : showSender && message.phone ? (
            <>
              From <bdi>{message.phone}</bdi>
            </>
          ) : (
            "Received"
          )}</strong> · <LocalTime value={message.timestamp} /> · {message.status}
        {line && (
          <>
            {" · "}
            <span className="line-label">Line <bdi>{line}</bdi></span>
          </>
        )}
        {message.send_at && (
          <>
            {" "}
            for <LocalTime value={message.send_at} />
          </>
        )}
        {change && (
          <>
            {" · "}
            <mark title={new Date(change.at).toLocaleString()}>{change.label}</mark>
          </>
        )}
      </small>
      {message.reply_to && (
        <small className="reply-to">Reply to {repliesTo ? <bdi>“{excerpt(repliesTo)}”</bdi> : "an earlier message"}</small>
      )}
      {/* dir="auto": a right-to-left override inside the text cannot reorder what surrounds it. */}
      {message.message && (
        <p id={describedId} dir="auto">
          {message.message}
        </p>
      )}
      {message.media.length > 0 && (
        <div className="media">
          {message.media.map((media, index) => (
            <MediaItem key={media.id} media={media} index={index} />
          ))}
        </div>
      )}
      {message.error && (
        <p className="error">
          Error: <bdi>{message.error}</bdi>
        </p>
      )}
      {message.reactions.length > 0 && <Reactions reactions={message.reactions} />}
      {showRead && message.read_at && (
        <small className="read">
          Read <LocalTime value={message.read_at} compact />
        </small>
      )}
      {capabilities && <MessageActions message={message} capabilities={capabilities} describedBy={describedId} />}
    </li>
  );
}
