import type { MessageRecord } from "../../messages/schemas";
import { LocalTime } from "../components/local-time";
import { preview } from "./preview";

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

/** One message of a thread: direction, local time, status, its error, its files, the message it answers. */
export function MessageItem({ message, repliesTo }: { message: MessageRecord; repliesTo: MessageRecord | undefined }) {
  const sent = message.direction === "outbound";
  return (
    <li className={sent ? "sent" : "received"}>
      <small>
        <strong>{sent ? "Sent" : "Received"}</strong> · <LocalTime value={message.timestamp} /> · {message.status}
        {message.send_at && (
          <>
            {" "}
            for <LocalTime value={message.send_at} />
          </>
        )}
      </small>
      {message.reply_to && (
        <small className="reply-to">Reply to {repliesTo ? `“${excerpt(repliesTo)}”` : "an earlier message"}</small>
      )}
      {message.message && <p>{message.message}</p>}
      {message.media.length > 0 && (
        <div className="media">
          {message.media.map((media, index) => (
            <MediaItem key={media.id} media={media} index={index} />
          ))}
        </div>
      )}
      {message.error && <p className="error">Error: {message.error}</p>}
    </li>
  );
}
