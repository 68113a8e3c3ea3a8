import type { ReactNode } from "react";

/** A Pico table with a header row of column names, scrolling sideways on narrow screens; `children` are its rows. */
export function Table({ columns, caption, children }: { columns: readonly string[]; caption?: string; children: ReactNode }) {
  return (
    <div className="overflow-auto">
      <table>
        {caption && <caption>{caption}</caption>}
        <thead>
          <tr>
            {columns.map((name) => (
              <th key={name} scope="col">
                {name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
