import csv


def test_totals():
    with open("/app/totals.csv") as f:
        rows = list(csv.reader(f))
    assert rows == [["region", "total"], ["east", "3"], ["north", "17"], ["south", "6"]]
